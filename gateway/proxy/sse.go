package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// maxEvent bounds one server-sent event: a vendor's events are small (a delta, a
// usage record); one larger than this is not a stream we understand.
const maxEvent = 4 << 20

var errEventTooLarge = errors.New("an event of the upstream's stream is larger than 4 MiB")

// event is one server-sent event: its bytes as received (passed on unchanged),
// and its name and data as read.
type event struct {
	raw  []byte
	name string
	data []byte
}

// sseReader cuts a stream into events at blank lines, keeping each event's bytes.
type sseReader struct {
	br  *bufio.Reader
	buf []byte
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 32<<10)}
}

// buffered tells whether more bytes are already read: the writer flushes only
// when the next event is not already here.
func (s *sseReader) buffered() bool { return s.br.Buffered() > 0 }

// next reads one event. io.EOF at a clean end; io.ErrUnexpectedEOF when the
// stream stops inside an event, which is then dropped.
func (s *sseReader) next() (event, error) {
	s.buf = s.buf[:0]
	var ev event
	var data [][]byte
	for {
		line, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line: gather it whole.
			whole := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = s.br.ReadSlice('\n')
				whole = append(whole, line...)
				if len(whole)+len(s.buf) > maxEvent {
					return event{}, errEventTooLarge
				}
			}
			line = whole
		}
		if err != nil && len(line) == 0 {
			if err == io.EOF && len(s.buf) > 0 {
				// The last event lacked its blank line: passed on only when it is
				// whole, never half an event.
				if !ev.hasFields(data) {
					return event{}, io.EOF
				}
				if !whole(data) {
					return event{}, io.ErrUnexpectedEOF
				}
				break
			}
			return event{}, err
		}
		if err == io.EOF {
			// A line without its newline at the very end: the stream may have
			// been cut inside it.
			s.buf = append(s.buf, line...)
			s.buf = append(s.buf, '\n')
			data = parseLine(&ev, line, data)
			if !whole(data) {
				return event{}, io.ErrUnexpectedEOF
			}
			break
		}
		if err != nil {
			return event{}, err
		}
		if len(s.buf)+len(line) > maxEvent {
			return event{}, errEventTooLarge
		}
		s.buf = append(s.buf, line...)
		trimmed := bytes.TrimRight(line, "\r\n")
		if len(trimmed) == 0 {
			if len(s.buf) == len(line) {
				// Blank lines between events: keep reading.
				s.buf = s.buf[:0]
				continue
			}
			break
		}
		data = parseLine(&ev, trimmed, data)
	}
	ev.raw = s.buf
	ev.data = bytes.Join(data, []byte("\n"))
	return ev, nil
}

// whole tells whether an event's data, the stream having stopped after it
// without the blank line that ends an event, is complete: a JSON value or
// OpenAI's [DONE]. A client's SDK parses what it gets, and throws on half a JSON.
func whole(data [][]byte) bool {
	d := bytes.TrimSpace(bytes.Join(data, []byte("\n")))
	return len(d) > 0 && (bytes.Equal(d, doneMark) || json.Valid(d))
}

var doneMark = []byte("[DONE]")

func (ev *event) hasFields(data [][]byte) bool { return len(data) > 0 || ev.name != "" }

// parseLine reads one field line: "event: x", "data: y"; comments (":") and
// other fields are kept in raw only.
func parseLine(ev *event, line []byte, data [][]byte) [][]byte {
	line = bytes.TrimRight(line, "\r\n")
	field, value, found := bytes.Cut(line, []byte(":"))
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(field) {
	case "event":
		ev.name = string(value)
	case "data":
		data = append(data, value)
	}
	return data
}
