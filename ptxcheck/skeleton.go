package ptxcheck

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// Skeleton returns a harness skeleton for entry of src, whose PTX file is
// ptxPath (the skeleton names its base name: save the harness beside
// it). It declares the entry's parameters in order, each with its
// declaration, size, offset and alignment in a note: a pointer-sized
// one (.u64, .b64) as a buffer of its own passed by {"ptr": B}, a .b8
// array as a pointer array ({"ptrarray": B}) when it holds whole
// aligned pointers, else as a struct of scalar fields, and every other
// scalar by its type. What only the kernel's author knows (the worlds,
// each buffer's kind and size, the launch's shape, the scalars' values,
// the input written and the result checked) is a string starting with
// "TODO", which [LoadHarness] refuses by its place until it is
// replaced; once every TODO is, the harness validates.
func Skeleton(src *Source, entry, ptxPath string) (string, error) {
	sig, err := src.Signature(entry)
	if err != nil {
		return "", err
	}
	var bufs, params []string
	var names []string
	buffer := func(name, note string) {
		names = append(names, name)
		bufs = append(bufs, fmt.Sprintf(`{"name": %s, "kind": "TODO: symmetric (every rank maps every rank's copy), signal (symmetric, zeroed) or plain (this rank's only)", "bytes": "TODO: its size in bytes, an expression of world and the vars", "note": %s}`,
			quote(name), quote(note)))
	}
	for i, d := range sig.Params {
		what := fmt.Sprintf("parameter %d: %s, %d bytes at offset %d, align %d", i, d, d.Size(), d.Offset, d.Align)
		name := fmt.Sprintf("p%d", i)
		switch form := scalarForm(d); {
		case d.Count == 1 && (d.Type == ".u64" || d.Type == ".b64"):
			buffer(name, fmt.Sprintf("parameter %d (%s): a pointer, or a 64-bit number (then give it as {\"u64\": EXPR} and drop this buffer)", i, d))
			params = append(params, fmt.Sprintf(`{"ptr": %s, "note": %s}`, quote(name), quote(what)))
		case d.Count > 1 || d.Type == ".b8" && d.Size() > 1:
			if d.Size()%8 == 0 && d.Align >= 8 && d.Size()/8 <= 72 {
				buffer(name, fmt.Sprintf("parameter %d (%s): the buffer whose copies, one per rank, fill the pointer array", i, d))
				params = append(params, fmt.Sprintf(`{"ptrarray": %s, "len": %d, "note": %s}`, quote(name), d.Size()/8,
					quote(what+`: every rank's copy by value (struct { T* ptrs[N]; }); for another struct, {"struct": [FIELD, ...]}`)))
				continue
			}
			unit := 1
			for _, u := range []int{8, 4, 2} {
				if u <= d.Align && d.Size()%u == 0 {
					unit = u
					break
				}
			}
			fields := make([]string, d.Size()/unit)
			for k := range fields {
				fields[k] = fmt.Sprintf(`{"u%d": "TODO: field at byte %d"}`, 8*unit, k*unit)
			}
			params = append(params, fmt.Sprintf(`{"struct": [%s], "note": %s}`, strings.Join(fields, ", "),
				quote(what+": a by-value struct, here as fields of its alignment: give its own fields in order")))
		default:
			params = append(params, fmt.Sprintf(`{%s: "TODO: its value, an expression of rank, world, iter and the vars", "note": %s}`, quote(form), quote(what)))
		}
	}
	if len(names) == 0 {
		buffer("data", "the entry takes no pointer: the buffer a write and a check use, if any")
	}
	oneOf := "TODO: one of " + strings.Join(names, ", ")
	var b strings.Builder
	fmt.Fprintf(&b, "{\n  \"ptx\": %s,\n", quote(filepath.Base(ptxPath)))
	fmt.Fprintf(&b, "  \"note\": %s,\n", quote("harness skeleton for "+entry+": replace every TODO (symmem check names those left; docs/check.md describes every field). "+
		`A pointer parameter is {"ptr": B} (this rank's copy; "rank": R gives rank R's, "offset": N bytes further), {"ptrs": B} (a device array of every rank's copy, T**) or {"ptrarray": B, "len": N} (that array by value); a struct's fields are packed at their natural alignment.`))
	b.WriteString("  \"worlds\": \"TODO: the world sizes the kernel is built for, such as 2,4,8 or 2-8\",\n")
	b.WriteString("  \"buffers\": [\n")
	for i, s := range bufs {
		b.WriteString("    " + s + comma(i, len(bufs)) + "\n")
	}
	b.WriteString("  ],\n  \"steps\": [\n")
	b.WriteString("    {\"repeat\": {\"times\": 3, \"steps\": [\n")
	fmt.Fprintf(&b, "      {\"write\": {\"buffer\": %s, \"dtype\": \"TODO: u8 u16 u32 u64 s8 s16 s32 s64 f16 bf16 f32 f64\", \"value\": \"TODO: element i of the input, an expression of i, rank, world and iter\"}},\n", quote(oneOf+" (the input)"))
	fmt.Fprintf(&b, "      {\"launch\": {\"entry\": %s, \"grid\": \"TODO: blocks\", \"block\": \"TODO: threads per block\", \"params\": [\n", quote(entry))
	for i, s := range params {
		b.WriteString("        " + s + comma(i, len(params)) + "\n")
	}
	b.WriteString("      ]}},\n")
	fmt.Fprintf(&b, "      {\"check\": {\"buffer\": %s, \"dtype\": \"TODO: u8 u16 u32 u64 s8 s16 s32 s64 f16 bf16 f32 f64\", \"value\": \"TODO: the expected element i, such as sum_ranks(rank*1000 + i + iter)\"}}\n", quote(oneOf+" (the result)"))
	b.WriteString("    ]}}\n  ]\n}\n")
	return b.String(), nil
}

// scalarForm is the parameter form of a scalar declaration.
func scalarForm(d ParamDecl) string {
	switch d.Type {
	case ".u8", ".b8":
		return "u8"
	case ".s8":
		return "s8"
	case ".u16", ".b16", ".f16", ".bf16":
		return "u16"
	case ".s16":
		return "s16"
	case ".u32", ".b32":
		return "u32"
	case ".s32":
		return "s32"
	case ".f32":
		return "f32"
	case ".s64":
		return "s64"
	case ".f64":
		return "f64"
	}
	return "u64"
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func comma(i, n int) string {
	if i < n-1 {
		return ","
	}
	return ""
}
