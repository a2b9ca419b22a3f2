// Package jsonfile decodes a file that holds one JSON value, with errors
// that say where in the text they arose (line and column), as a person
// who edits the file needs them.
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Decode decodes b, which must hold exactly one JSON value (white space
// around it aside), into v. With strict, an object field that v has no
// place for is an error. An error names the line and column of the bad
// byte, of a value of the wrong type (its last byte, or the bracket or
// brace that opens it), of the text after the value, or of the end of
// the text.
func Decode(b []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return explain(b, err)
	}
	if rest := bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return fmt.Errorf("%s: text after the JSON value", LineCol(b, int64(len(b)-len(rest))))
	}
	return nil
}

// explain places the decoder's err in b and says what an early end
// means.
func explain(b []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("empty: want a JSON value")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("the JSON ends early, at %s: a bracket, brace or string is not closed", LineCol(b, int64(len(b))))
	case errors.As(err, &syn): // Offset counts the bytes read, the bad one included
		return fmt.Errorf("%s: %w", LineCol(b, syn.Offset-1), err)
	case errors.As(err, &typ):
		return fmt.Errorf("%s: %w", LineCol(b, valueEnd(b, typ.Offset)), err)
	}
	return err
}

// valueEnd is the index of the last byte of the value that ends at or
// just before off: the decoder knows a number or literal has ended only
// once it read the byte after it.
func valueEnd(b []byte, off int64) int64 {
	end := min(off, int64(len(b))) - 1
	if end > 0 && bytes.IndexByte([]byte(" \t\r\n,]}"), b[end]) >= 0 && isWordByte(b[end-1]) {
		end--
	}
	return end
}

func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '+' || c == '-'
}

// LineCol is "line L column C" (1-based) of the byte at index off of b,
// or of the end of b.
func LineCol(b []byte, off int64) string {
	off = min(max(off, 0), int64(len(b)))
	before := b[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d column %d", line, col)
}
