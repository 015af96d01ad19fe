package model

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// sseEvent is one server-sent event: its type (the "event:" field, "" when absent)
// and its data lines joined by "\n". Error holds the lines of an "error:" field,
// which is no field of the standard but is how llama.cpp's server reports a failure
// in the middle of a stream: a reader that drops unknown fields, as the standard
// says, would take the failed answer for a finished one.
type sseEvent struct {
	Event string
	Data  []byte
	Error []byte
}

// maxSSELine bounds one line. A vendor's chunk is a few hundred bytes; this only stops
// a broken or hostile server from making the host buffer without end.
const maxSSELine = 8 << 20

var errSSELineTooLong = fmt.Errorf("a server-sent event line is longer than %d bytes", maxSSELine)

// sseReader reads events as the WHATWG EventSource algorithm does, which both vendors
// follow: fields up to a blank line, "data" lines accumulate, comments (":") and
// unknown fields are skipped, any of \r\n, \n or \r ends a line.
type sseReader struct {
	r       *bufio.Reader
	pendCR  bool // the last line ended in \r: a following \n belongs to it
	event   []byte
	data    []byte
	hasData bool
	errData []byte
	hasErr  bool
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 32<<10)}
}

// readLine returns one line without its terminator; io.EOF only when no byte of a
// line was read.
func (s *sseReader) readLine() ([]byte, error) {
	var line []byte
	for {
		if s.pendCR {
			// A \r ended the last line: a \n right after it belongs to it.
			s.pendCR = false
			b, err := s.r.ReadByte()
			if err != nil {
				return nil, err
			}
			if b != '\n' {
				s.r.UnreadByte()
			}
		}
		buf, err := s.r.Peek(max(1, s.r.Buffered()))
		if len(buf) == 0 {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return line, nil
			}
			return nil, err
		}
		if i := bytes.IndexAny(buf, "\r\n"); i >= 0 {
			if len(line)+i > maxSSELine {
				return nil, errSSELineTooLong
			}
			line = append(line, buf[:i]...)
			s.pendCR = buf[i] == '\r'
			s.r.Discard(i + 1)
			return line, nil
		}
		if len(line)+len(buf) > maxSSELine {
			return nil, errSSELineTooLong
		}
		line = append(line, buf...)
		s.r.Discard(len(buf))
	}
}

// Next returns the next event. At the end of the stream it returns io.EOF, after
// dispatching an event that lacked its final blank line (some servers close right
// after the last data line). Other read errors come back as they are.
func (s *sseReader) Next() (sseEvent, error) {
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && (s.hasData || s.hasErr) {
				return s.dispatch(), nil
			}
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if s.hasData || s.hasErr {
				return s.dispatch(), nil
			}
			s.event = s.event[:0]
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			s.event = append(s.event[:0], value...)
		case "data":
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.hasData = true
		case "error":
			if s.hasErr {
				s.errData = append(s.errData, '\n')
			}
			s.errData = append(s.errData, value...)
			s.hasErr = true
		}
	}
}

func (s *sseReader) dispatch() sseEvent {
	ev := sseEvent{Event: string(s.event), Data: bytes.Clone(s.data)}
	if s.hasErr {
		ev.Error = bytes.Clone(s.errData)
	}
	s.event, s.data, s.hasData = s.event[:0], s.data[:0], false
	s.errData, s.hasErr = s.errData[:0], false
	return ev
}
