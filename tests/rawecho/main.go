// Command rawecho is the smallest native messaging host that speaks Ferry's wire
// protocol: the floor that the browser benchmark holds ferry up against. It has no
// goroutines, no logging and no storage, so whatever ferry costs above it is ferry's.
// It splits large replies into $/chunk frames exactly as protocol/PROTOCOL.md says, so
// the same measuring code (and the extension) can read both hosts.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Chrome closes the port on a host→browser frame above 1 MiB; the envelope margin is
// the one protocol.SplitOutbound uses, so both hosts cut the same number of chunks.
const maxFrame, envelope = 1 << 20, 160

// pingUnit is host.PingPayload's unit, copied rather than imported so that the
// yardstick shares no code with what it measures; its quote, backslash and three-byte
// character give the same escaping and chunk count as ferry's reply.
const pingUnit = "0123456789\"\\\u2713."

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Payload json.RawMessage `json:"payload"`
		Size    int             `json:"size"`
		DelayMS int             `json:"delay_ms"`
	} `json:"params"`
}

func main() {
	in, out := bufio.NewReaderSize(os.Stdin, 1<<16), os.Stdout
	var hdr [4]byte
	for chunks := 0; ; {
		if _, err := io.ReadFull(in, hdr[:]); err != nil {
			return
		}
		n := binary.LittleEndian.Uint32(hdr[:])
		if n == 0 || n > 64<<20 {
			return // the stream cannot be resynchronised after a bad length
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(in, body); err != nil {
			return
		}
		var req request
		if json.Unmarshal(body, &req) != nil || req.ID == nil {
			continue // notifications need no answer
		}
		var result any = map[string]any{}
		switch req.Method {
		case "host.hello":
			result = map[string]any{"name": "rawecho", "version": "0", "protocol": 1}
		case "host.ping":
			time.Sleep(time.Duration(req.Params.DelayMS) * time.Millisecond)
			var payload any
			if n := req.Params.Size; n > 0 {
				payload = strings.Repeat(pingUnit, n/len(pingUnit)) + strings.Repeat("x", n%len(pingUnit))
			} else if req.Params.Payload != nil {
				payload = req.Params.Payload
			}
			result = map[string]any{"payload": payload}
		}
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
		if len(msg) <= maxFrame {
			writeFrame(out, msg)
			continue
		}
		chunks++
		id := "c" + strconv.Itoa(chunks)
		var parts [][]byte
		for budget := maxFrame - envelope - len(id); len(msg) > 0; {
			end := cut(msg, budget)
			parts, msg = append(parts, msg[:end]), msg[end:]
		}
		for i, part := range parts {
			f := []byte(`{"jsonrpc":"2.0","method":"$/chunk","params":{"id":"` + id + `","index":` +
				strconv.Itoa(i) + `,"count":` + strconv.Itoa(len(parts)) + `,"data":"`)
			for _, b := range part {
				switch {
				case b == '"' || b == '\\':
					f = append(f, '\\', b)
				case b < 0x20:
					f = append(f, `\u00`...)
					f = append(f, "0123456789abcdef"[b>>4], "0123456789abcdef"[b&15])
				default:
					f = append(f, b)
				}
			}
			writeFrame(out, append(f, `"}}`...))
		}
	}
}

// cut returns how many bytes of msg fit budget once escaped as a JSON string, ending on
// a UTF-8 character boundary so each slice is a valid string by itself.
func cut(msg []byte, budget int) int {
	cost, i := 0, 0
	for ; i < len(msg); i++ {
		c := 1
		switch b := msg[i]; {
		case b == '"' || b == '\\':
			c = 2
		case b < 0x20:
			c = 6
		}
		if cost+c > budget {
			break
		}
		cost += c
	}
	for i < len(msg) && i > 0 && msg[i]&0xC0 == 0x80 {
		i--
	}
	return i
}

// writeFrame sends header and body in one write so that a frame is never split
// between two pipe writes.
func writeFrame(w io.Writer, msg []byte) {
	f := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(msg)), uint32(len(msg)))
	if _, err := w.Write(append(f, msg...)); err != nil {
		os.Exit(0) // the browser closed the port
	}
}
