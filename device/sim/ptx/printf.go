package ptx

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// vprintf is CUDA's printf: call.uni (ret), vprintf, (format, args),
// with the address of the format string and of the argument buffer (each
// argument at its size's alignment: 4 bytes for int and smaller, 8 for
// long, long long, double and pointers; a float is passed as a double).
// The interpreter formats the text and keeps the thread's last line
// ([TrapError] quotes it: a kernel prints why it traps); it returns, as
// CUDA does, the number of arguments the format names, -1 for a null
// format. The format and %s strings are read from the module's
// variables or the thread's local, shared or parameter memory; one in
// global memory is an error (the simulator would have to make the read
// an access of the memory model).

// maxPrinted bounds the text kept of a thread's last vprintf.
const maxPrinted = 512

// printf executes a call of vprintf.
func (t *Thread) printf(f *frame, in *inst) error {
	fmtAddr := binary.LittleEndian.Uint64(f.params[in.ops[0].sym.offset:])
	argAddr := binary.LittleEndian.Uint64(f.params[in.ops[1].sym.offset:])
	ret := in.rets[0].sym
	if fmtAddr == 0 {
		binary.LittleEndian.PutUint32(f.params[ret.offset:], math.MaxUint32) // -1
		return nil
	}
	format, err := t.cString(fmtAddr)
	if err != nil {
		return fmt.Errorf("vprintf: the format: %w", err)
	}
	text, n, err := t.formatArgs(format, argAddr)
	if err != nil {
		return fmt.Errorf("vprintf %q: %w", format, err)
	}
	if len(text) > maxPrinted {
		text = text[:maxPrinted] + "..."
	}
	t.printed = strings.TrimRight(text, "\n")
	binary.LittleEndian.PutUint32(f.params[ret.offset:], uint32(n))
	return nil
}

// readBytes reads n bytes at a generic address outside global memory.
func (t *Thread) readBytes(addr uint64, n int) ([]byte, error) {
	buf := make([]byte, n)
	switch {
	case addr >= GlobalVarWindow && addr < GlobalVarWindow+windowSize:
		return buf, move(t.m.globals, addr-GlobalVarWindow, buf, false, "module-scope variable")
	case addr >= LocalWindow && addr < LocalWindow+windowSize:
		return buf, move(t.local, addr-LocalWindow, buf, false, "local")
	case addr >= SharedWindow && addr < SharedWindow+windowSize:
		return buf, move(t.mem.Shared, addr-SharedWindow, buf, false, "shared")
	case addr >= ParamWindow && addr < ParamWindow+windowSize:
		return buf, move(t.mem.Params, addr-ParamWindow, buf, false, "kernel parameter")
	}
	return nil, fmt.Errorf("address %#x is in global memory, which vprintf does not read", addr)
}

// cString reads the NUL-terminated string at addr (at most 4096 bytes).
func (t *Thread) cString(addr uint64) (string, error) {
	var b strings.Builder
	for i := uint64(0); i < 4096; i++ {
		c, err := t.readBytes(addr+i, 1)
		if err != nil {
			return "", err
		}
		if c[0] == 0 {
			return b.String(), nil
		}
		b.WriteByte(c[0])
	}
	return "", fmt.Errorf("no NUL in 4096 bytes at %#x", addr)
}

// formatArgs formats format with the arguments at args; n is the number
// of arguments the format names.
func (t *Thread) formatArgs(format string, args uint64) (text string, n int, err error) {
	var b strings.Builder
	off := uint64(0)
	next := func(size int) (uint64, error) {
		off = (off + uint64(size) - 1) / uint64(size) * uint64(size)
		v, err := t.readBytes(args+off, size)
		if err != nil {
			return 0, err
		}
		off += uint64(size)
		if size == 4 {
			return uint64(binary.LittleEndian.Uint32(v)), nil
		}
		return binary.LittleEndian.Uint64(v), nil
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		// %[flags][width][.precision][length]conversion
		j := i + 1
		for j < len(format) && strings.IndexByte("-+ #0123456789.", format[j]) >= 0 {
			j++
		}
		spec := format[i+1 : j]
		long := 0
		for j < len(format) && strings.IndexByte("hlzjt", format[j]) >= 0 {
			if format[j] == 'l' || format[j] == 'z' || format[j] == 'j' || format[j] == 't' {
				long++
			}
			j++
		}
		if j >= len(format) {
			return "", 0, fmt.Errorf("a conversion without its letter at the end")
		}
		conv := format[j]
		i = j
		n++
		size := 4
		if long > 0 || conv == 'p' || conv == 's' || strings.IndexByte("feEgGaA", conv) >= 0 {
			size = 8
		}
		if args == 0 {
			return "", 0, fmt.Errorf("argument %d: no argument buffer", n)
		}
		v, err := next(size)
		if err != nil {
			return "", 0, fmt.Errorf("argument %d: %w", n, err)
		}
		switch conv {
		case 'd', 'i':
			x := int64(v)
			if size == 4 {
				x = int64(int32(v))
			}
			fmt.Fprintf(&b, "%"+spec+"d", x)
		case 'u':
			fmt.Fprintf(&b, "%"+spec+"d", v)
		case 'x', 'X', 'o':
			fmt.Fprintf(&b, "%"+spec+string(conv), v)
		case 'c':
			b.WriteByte(byte(v))
		case 'p':
			b.WriteString("0x" + strconv.FormatUint(v, 16))
		case 'f', 'F', 'e', 'E', 'g', 'G':
			fmt.Fprintf(&b, "%"+spec+string(conv|0x20), math.Float64frombits(v))
		case 's':
			s, err := t.cString(v)
			if err != nil {
				return "", 0, fmt.Errorf("argument %d (%%s): %w", n, err)
			}
			fmt.Fprintf(&b, "%"+spec+"s", s)
		default:
			return "", 0, fmt.Errorf("unsupported conversion %%%c", conv)
		}
	}
	return b.String(), n, nil
}
