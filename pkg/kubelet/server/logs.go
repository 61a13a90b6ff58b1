package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// LogOptions are kubectl logs' options.
type LogOptions struct {
	Follow     bool
	Timestamps bool
	TailLines  int // -1: all
	LimitBytes int64
	Since      time.Time
}

// criLine is one line of a CRI log file:
// "2016-10-06T00:17:09.669794202Z stdout F the content".
type criLine struct {
	ts      string
	partial bool
	content []byte
}

func parseCRILine(line []byte) (criLine, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	parts := bytes.SplitN(line, []byte(" "), 4)
	if len(parts) < 3 {
		return criLine{}, fmt.Errorf("malformed CRI log line %q", trimmed(string(line)))
	}
	l := criLine{ts: string(parts[0]), partial: string(parts[2]) == "P"}
	if len(parts) == 4 {
		l.content = parts[3]
	}
	return l, nil
}

// CopyLog writes the container's log from f to w in the user's format.
// With running non-nil and returning true, it keeps reading new lines
// until running says the container stopped or ctx ends.
func CopyLog(ctx context.Context, w io.Writer, f io.Reader, opts LogOptions, running func() bool, poll time.Duration) error {
	r := bufio.NewReader(f)
	var written int64
	emit := func(l criLine) (bool, error) {
		if !opts.Since.IsZero() {
			if ts, err := time.Parse(time.RFC3339Nano, l.ts); err == nil && ts.Before(opts.Since) {
				return true, nil
			}
		}
		var buf bytes.Buffer
		if opts.Timestamps {
			buf.WriteString(l.ts)
			buf.WriteByte(' ')
		}
		buf.Write(l.content)
		if !l.partial {
			buf.WriteByte('\n')
		}
		b := buf.Bytes()
		if opts.LimitBytes > 0 && written+int64(len(b)) > opts.LimitBytes {
			b = b[:opts.LimitBytes-written]
		}
		n, err := w.Write(b)
		written += int64(n)
		if fl, ok := w.(http.Flusher); ok && opts.Follow {
			fl.Flush()
		}
		if err != nil {
			return false, err
		}
		return opts.LimitBytes <= 0 || written < opts.LimitBytes, nil
	}

	// Existing content first, cut to tailLines.
	var lines []criLine
	var pending []byte
	for {
		chunk, err := r.ReadBytes('\n')
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			line := append(pending, chunk...)
			pending = nil
			if l, perr := parseCRILine(line); perr == nil {
				lines = append(lines, l)
				if opts.TailLines >= 0 && countFull(lines) > opts.TailLines {
					lines = dropFirstLogical(lines)
				}
			}
		} else if len(chunk) > 0 {
			pending = append(pending, chunk...)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if opts.TailLines == 0 {
		lines = nil
	}
	for _, l := range lines {
		more, err := emit(l)
		if err != nil || !more {
			return err
		}
	}
	if running == nil {
		return nil
	}
	for {
		chunk, err := r.ReadBytes('\n')
		if len(chunk) > 0 {
			pending = append(pending, chunk...)
			if pending[len(pending)-1] == '\n' {
				if l, perr := parseCRILine(pending); perr == nil {
					more, werr := emit(l)
					if werr != nil || !more {
						return werr
					}
				}
				pending = nil
			}
		}
		if err == nil {
			continue
		}
		if err != io.EOF {
			return err
		}
		if !running() {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

// countFull counts logical lines (a run of partials ends with a full one).
func countFull(lines []criLine) int {
	n := 0
	for _, l := range lines {
		if !l.partial {
			n++
		}
	}
	return n
}

func dropFirstLogical(lines []criLine) []criLine {
	for i, l := range lines {
		if !l.partial {
			return lines[i+1:]
		}
	}
	return lines
}
