package store

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

var sampleRequests = []Request{
	{ID: 1, Client: "rank0", Op: OpSet, Keys: []string{"job/world/0/0"}, Value: []byte("hello")},
	{ID: 2, Client: "rank1", Op: OpGet, Keys: []string{"k"}, Timeout: 30 * time.Second},
	{ID: 3, Client: "r", Op: OpWait, Keys: []string{"a/0/1", "a/0/3"}, Timeout: time.Second},
	{ID: 1 << 40, Client: "r", Op: OpAdd, Keys: []string{"n"}, Delta: -12345},
	{ID: 5, Client: "", Op: OpCompareSet, Keys: []string{"leader"}, Expected: []byte("x"), Value: []byte("y")},
	{ID: 6, Op: OpCheck},
	{ID: 7, Op: OpDelete, Keys: []string{"gone"}},
	{ID: 8, Op: OpNumKeys},
}

var sampleResponses = []Response{
	{ID: 1},
	{ID: 2, Value: []byte("payload")},
	{ID: 3, Code: CodeTimeout, Keys: []string{"a/0/1", "a/0/3"}, After: time.Second},
	{ID: 4, Num: -98},
	{ID: 5, Code: CodeInvalid, Msg: "value under \"s\" is not a decimal int64"},
	{ID: 6, Code: CodeDenied, Msg: "wrong job token"},
	{ID: 7, Code: CodeClosed, Msg: "store is shutting down"},
}

func TestWireRoundTrip(t *testing.T) {
	for _, r := range sampleRequests {
		token, got, err := decodeRequest(encodeRequest("tok", &r))
		if err != nil {
			t.Fatalf("%s: %v", r.Op, err)
		}
		if token != "tok" || !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip of %+v gave %+v token %q", r, got, token)
		}
	}
	for _, r := range sampleResponses {
		got, err := decodeResponse(encodeResponse(&r))
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip of %+v gave %+v", r, got)
		}
	}
}

func TestWireRejectsMalformed(t *testing.T) {
	good := encodeRequest("tok", &sampleRequests[0])
	// A request whose value length claims more than the limit, in a few bytes.
	huge := appendHeader(nil, kindRequest)
	huge = binary.AppendUvarint(huge, 9)
	huge = appendString(huge, "tok")
	huge = appendString(huge, "c")
	huge = append(huge, byte(OpSet))
	huge = binary.AppendVarint(huge, 0)
	huge = binary.AppendVarint(huge, 0)
	huge = appendKeys(huge, []string{"k"})
	huge = binary.AppendUvarint(huge, MaxValueSize+1)
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "missing magic"},
		{"garbage", []byte("definitely not a store message"), "missing magic"},
		{"wrong version", append([]byte{'s', 'm', 9}, good[3:]...), "wire version"},
		{"response as request", encodeResponse(&sampleResponses[0]), "message kind"},
		{"truncated", good[:len(good)-2], "truncated"},
		{"trailing", append(append([]byte(nil), good...), 0), "trailing"},
		{"oversized value", huge, "exceeds the 67108864-byte limit"},
		{"bad op", func() []byte {
			r := sampleRequests[0]
			r.Op = 200
			return encodeRequest("tok", &r)
		}(), "unknown operation"},
		{"too many keys", func() []byte {
			b := appendHeader(nil, kindRequest)
			b = binary.AppendUvarint(b, 1)
			b = appendString(b, "")
			b = appendString(b, "")
			b = append(b, byte(OpCheck), 0, 0)
			return binary.AppendUvarint(b, MaxKeys+1)
		}(), "keys exceed the limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decodeRequest(tc.b)
			if !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decodeRequest = %v, want malformed mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := decodeResponse(append(encodeResponse(&sampleResponses[1]), 1)); !errors.Is(err, errMalformed) {
		t.Fatalf("decodeResponse with trailing bytes = %v", err)
	}
	bad := encodeResponse(&sampleResponses[0])
	bad[5] = byte(numCodes)
	if _, err := decodeResponse(bad); err == nil || !strings.Contains(err.Error(), "unknown response code") {
		t.Fatalf("decodeResponse with a bad code = %v", err)
	}
}

// FuzzDecodeRequest checks that any bytes decode without panicking, and
// that what decodes re-encodes to the same request.
func FuzzDecodeRequest(f *testing.F) {
	for _, r := range sampleRequests {
		f.Add(encodeRequest("token", &r))
	}
	f.Add([]byte("sm\x01Q"))
	f.Fuzz(func(t *testing.T, b []byte) {
		token, r, err := decodeRequest(b)
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error %v is not marked malformed", err)
			}
			return
		}
		token2, r2, err := decodeRequest(encodeRequest(token, &r))
		if err != nil {
			t.Fatalf("re-encoded request does not decode: %v", err)
		}
		if token2 != token || !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed %+v into %+v", r, r2)
		}
		// Whatever decodes, the machine must answer without panicking.
		NewMachine().Apply(1, r)
	})
}

// FuzzDecodeResponse is FuzzDecodeRequest for responses.
func FuzzDecodeResponse(f *testing.F) {
	for _, r := range sampleResponses {
		f.Add(encodeResponse(&r))
	}
	f.Add([]byte("sm\x01R"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeResponse(b)
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error %v is not marked malformed", err)
			}
			return
		}
		r2, err := decodeResponse(encodeResponse(&r))
		if err != nil {
			t.Fatalf("re-encoded response does not decode: %v", err)
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed %+v into %+v", r, r2)
		}
	})
}
