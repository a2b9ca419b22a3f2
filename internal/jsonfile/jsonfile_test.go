package jsonfile

import (
	"strings"
	"testing"
)

type doc struct {
	Name  string `json:"name"`
	Sizes []int  `json:"sizes"`
}

// TestDecodeErrors: every way a file is not one JSON value of the right
// shape is named with the line and column where it shows.
func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		text   string
		strict bool
		want   string
	}{
		{"", false, "empty: want a JSON value"},
		{" \n\t", false, "empty: want a JSON value"},
		{"{\"name\": \"a\",\n  \"sizes\": [1,", false, "the JSON ends early, at line 2 column 15"},
		{"{\"name\": \"a\",\n  \"sizes\": 2}", false, "line 2 column 12: json: cannot unmarshal number"},
		{"{\"name\": \"a\",\n  \"sizes\" 2}", false, "line 2 column 11: invalid character '2'"},
		{"{\"name\": \"a\"}\n{\"name\": \"b\"}", false, "line 2 column 1: text after the JSON value"},
		{"{\"name\": true}", false, "line 1 column 13: json: cannot unmarshal bool"},
		{"{\"name\": [\"a\"]}", false, "line 1 column 10: json: cannot unmarshal array"},
		{"{\"sizes\": [1, \"2\"]}", false, "line 1 column 17: json: cannot unmarshal string"},
		{"{\"name\": \"a\", \"extra\": 1}", true, `json: unknown field "extra"`},
	} {
		var d doc
		err := Decode([]byte(c.text), &d, c.strict)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error saying %q", c.text, err, c.want)
		}
	}
}

// TestDecode: one value, white space around it, and (not strict) fields
// the value has no place for, decode.
func TestDecode(t *testing.T) {
	var d doc
	if err := Decode([]byte("\n{\"name\": \"a\", \"sizes\": [1, 2], \"extra\": true}\n\n"), &d, false); err != nil {
		t.Fatal(err)
	}
	if d.Name != "a" || len(d.Sizes) != 2 || d.Sizes[1] != 2 {
		t.Errorf("decoded %+v", d)
	}
}

func TestLineCol(t *testing.T) {
	b := []byte("ab\ncd\n")
	for off, want := range map[int64]string{0: "line 1 column 1", 1: "line 1 column 2", 3: "line 2 column 1",
		4: "line 2 column 2", 6: "line 3 column 1", 99: "line 3 column 1", -1: "line 1 column 1"} {
		if got := LineCol(b, off); got != want {
			t.Errorf("LineCol(%d) = %q, want %q", off, got, want)
		}
	}
}
