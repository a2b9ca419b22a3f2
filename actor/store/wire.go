package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// The wire format carries requests and responses between processes inside a
// protobuf BytesValue. Every message starts with the magic "sm", a version
// byte and a kind byte ('Q' request, 'R' response). Integers are varints,
// strings and byte slices are a uvarint length then the bytes.
//
//	request:  id token client op timeout(ns) delta nkeys key... value expected
//	response: id code msg value num after(ns) nkeys key...
//
// Decoding checks every length against the limits and the bytes left before
// allocating, and rejects trailing bytes.
const (
	wireVersion  = 1
	kindRequest  = 'Q'
	kindResponse = 'R'
	// maxWireSize bounds one encoded message: two values, the keys and
	// the small fields.
	maxWireSize = 2*MaxValueSize + MaxKeyBytes + 10*MaxKeys + 3*MaxNameSize + 1<<10
)

// errMalformed marks bytes that are not a valid store message.
var errMalformed = errors.New("malformed store message")

func appendHeader(b []byte, kind byte) []byte {
	return append(b, 's', 'm', wireVersion, kind)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendKeys(b []byte, keys []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = appendString(b, k)
	}
	return b
}

// encodeRequest encodes r with the job token.
func encodeRequest(token string, r *Request) []byte {
	n := 64 + len(token) + len(r.Client) + len(r.Value) + len(r.Expected)
	for _, k := range r.Keys {
		n += len(k) + 3
	}
	b := appendHeader(make([]byte, 0, n), kindRequest)
	b = binary.AppendUvarint(b, r.ID)
	b = appendString(b, token)
	b = appendString(b, r.Client)
	b = append(b, byte(r.Op))
	b = binary.AppendVarint(b, int64(r.Timeout))
	b = binary.AppendVarint(b, r.Delta)
	b = appendKeys(b, r.Keys)
	b = appendBytes(b, r.Value)
	return appendBytes(b, r.Expected)
}

// encodeResponse encodes r.
func encodeResponse(r *Response) []byte {
	n := 64 + len(r.Msg) + len(r.Value)
	for _, k := range r.Keys {
		n += len(k) + 3
	}
	b := appendHeader(make([]byte, 0, n), kindResponse)
	b = binary.AppendUvarint(b, r.ID)
	b = append(b, byte(r.Code))
	b = appendString(b, r.Msg)
	b = appendBytes(b, r.Value)
	b = binary.AppendVarint(b, r.Num)
	b = binary.AppendVarint(b, int64(r.After))
	return appendKeys(b, r.Keys)
}

// decoder reads wire fields, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) header(kind byte) {
	if len(d.b) > maxWireSize {
		d.fail("%d bytes exceed the %d-byte message limit", len(d.b), maxWireSize)
		return
	}
	if len(d.b) < 4 || d.b[0] != 's' || d.b[1] != 'm' {
		d.fail("missing magic")
		return
	}
	if d.b[2] != wireVersion {
		d.fail("wire version %d, want %d", d.b[2], wireVersion)
		return
	}
	if d.b[3] != kind {
		d.fail("message kind %q, want %q", d.b[3], kind)
		return
	}
	d.b = d.b[4:]
}

func (d *decoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("%s: truncated", what)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("%s: bad uvarint", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("%s: bad varint", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// raw reads a length-prefixed field of at most limit bytes, without copying.
func (d *decoder) raw(what string, limit int) []byte {
	n := d.uvarint(what + " length")
	if d.err != nil {
		return nil
	}
	if n > uint64(limit) {
		d.fail("%s of %d bytes exceeds the %d-byte limit", what, n, limit)
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("%s of %d bytes is truncated (%d left)", what, n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(what string, limit int) []byte {
	v := d.raw(what, limit)
	if len(v) == 0 {
		return nil
	}
	return append([]byte(nil), v...)
}

func (d *decoder) string(what string, limit int) string {
	return string(d.raw(what, limit))
}

func (d *decoder) keys() []string {
	n := d.uvarint("key count")
	if d.err != nil {
		return nil
	}
	if n > MaxKeys {
		d.fail("%d keys exceed the limit of %d", n, MaxKeys)
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("%d keys cannot fit in %d bytes", n, len(d.b))
		return nil
	}
	var keys []string
	total := 0
	for i := range n {
		k := d.string(fmt.Sprintf("key %d", i), MaxKeySize)
		if d.err != nil {
			return nil
		}
		total += len(k)
		if total > MaxKeyBytes {
			d.fail("keys exceed %d bytes in all", MaxKeyBytes)
			return nil
		}
		keys = append(keys, k)
	}
	return keys
}

func (d *decoder) end() {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
}

// decodeRequest decodes a request and the token it carries. It checks the
// wire format and the size limits, not the request's meaning (see
// [Request.Validate]). The ID is returned even on error when it was read, so
// the error response can name it.
func decodeRequest(b []byte) (token string, r Request, err error) {
	d := decoder{b: b}
	d.header(kindRequest)
	r.ID = d.uvarint("id")
	token = d.string("token", MaxNameSize)
	r.Client = d.string("client name", MaxNameSize)
	r.Op = Op(d.byte("op"))
	if d.err == nil && !r.Op.valid() {
		d.fail("unknown operation %d", uint8(r.Op))
	}
	r.Timeout = time.Duration(d.varint("timeout"))
	r.Delta = d.varint("delta")
	r.Keys = d.keys()
	r.Value = d.bytes("value", MaxValueSize)
	r.Expected = d.bytes("expected value", MaxValueSize)
	d.end()
	if d.err != nil {
		return "", Request{ID: r.ID}, d.err
	}
	return token, r, nil
}

// decodeResponse decodes a response.
func decodeResponse(b []byte) (Response, error) {
	var r Response
	d := decoder{b: b}
	d.header(kindResponse)
	r.ID = d.uvarint("id")
	r.Code = Code(d.byte("code"))
	if d.err == nil && r.Code >= numCodes {
		d.fail("unknown response code %d", uint8(r.Code))
	}
	r.Msg = d.string("message", MaxValueSize)
	r.Value = d.bytes("value", MaxValueSize)
	r.Num = d.varint("num")
	r.After = time.Duration(d.varint("after"))
	r.Keys = d.keys()
	d.end()
	if d.err != nil {
		return Response{}, d.err
	}
	return r, nil
}
