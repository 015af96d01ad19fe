package protocol

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"
)

// ChunkMethod is the reserved notification that carries one slice of a message too
// large for a single host→browser frame.
const ChunkMethod = "$/chunk"

// chunkEnvelopeMax bounds the bytes a chunk frame adds around its data: the fixed JSON
// text plus an id and two numbers. Ids are short counters, so 160 is generous.
const chunkEnvelopeMax = 160

// SplitOutbound returns the frames that carry msg to the browser: msg itself when it
// fits one frame, otherwise chunk frames none of which exceeds frameLimit bytes.
// id names the chunked message and must be unique on the connection.
func SplitOutbound(msg []byte, id string, frameLimit int) [][]byte {
	if len(msg) <= frameLimit {
		return [][]byte{msg}
	}
	frames := chunkFrames(msg, id, frameLimit)
	for i, f := range frames {
		frames[i] = f[frameHeader:]
	}
	return frames
}

// frameHeader is the length prefix of a frame.
const frameHeader = 4

// chunkFrames cuts msg into chunk frames of at most frameLimit bytes each, every one
// with its length prefix already in place, so that each goes out as it is built: one
// pass over msg to find the cuts, one to escape it into the frames.
func chunkFrames(msg []byte, id string, frameLimit int) [][]byte {
	budget := frameLimit - chunkEnvelopeMax - len(id)
	var cuts []int // end offsets of each slice
	for start := 0; start < len(msg); {
		end := sliceEnd(msg, start, budget)
		cuts = append(cuts, end)
		start = end
	}
	frames := make([][]byte, len(cuts))
	count := strconv.Itoa(len(cuts))
	start := 0
	for i, end := range cuts {
		// A slice's escaped length is at most the budget: the frame never grows.
		f := make([]byte, frameHeader, frameHeader+chunkEnvelopeMax+len(id)+budget)
		f = append(f, `{"jsonrpc":"2.0","method":"$/chunk","params":{"id":`...)
		f = strconv.AppendQuote(f, id)
		f = append(f, `,"index":`...)
		f = strconv.AppendInt(f, int64(i), 10)
		f = append(f, `,"count":`...)
		f = append(f, count...)
		f = append(f, `,"data":"`...)
		f = appendEscaped(f, msg[start:end])
		f = append(f, `"}}`...)
		putFrameHeader(f)
		frames[i] = f
		start = end
	}
	return frames
}

// sliceEnd finds where a slice starting at start must end so that its escaped form
// fits budget bytes, cutting only at a UTF-8 character boundary so every slice is a
// valid JSON string on its own.
func sliceEnd(msg []byte, start, budget int) int {
	cost, i := 0, start
	for i < len(msg) {
		// Eight plain bytes cost eight: most of a message goes by a word at a time.
		if i+8 <= len(msg) && cost+8 <= budget && !hasSpecial(binary.LittleEndian.Uint64(msg[i:])) {
			cost += 8
			i += 8
			continue
		}
		c := int(escapeCost[msg[i]])
		if cost+c > budget {
			break
		}
		cost += c
		i++
	}
	if i == len(msg) {
		return i
	}
	for i > start && !utf8.RuneStart(msg[i]) {
		i--
	}
	if i == start {
		// Only an absurdly small limit gets here; move on by one character rather
		// than loop forever.
		_, n := utf8.DecodeRune(msg[start:])
		return start + n
	}
	return i
}

// escapeCost is the length of each byte once written inside a JSON string: a table,
// because this runs once per byte of every large message.
var escapeCost = func() (t [256]uint8) {
	for i := range t {
		switch {
		case i == '"' || i == '\\':
			t[i] = 2
		case i < 0x20:
			t[i] = 6
		default:
			t[i] = 1
		}
	}
	return t
}()

const hexDigits = "0123456789abcdef"

func appendEscaped(dst, s []byte) []byte {
	run := 0 // start of the bytes not yet copied: copied in bulk between escapes
	for i := 0; i < len(s); i++ {
		if i+8 <= len(s) && !hasSpecial(binary.LittleEndian.Uint64(s[i:])) {
			i += 7
			continue
		}
		b := s[i]
		if escapeCost[b] == 1 {
			continue
		}
		dst = append(dst, s[run:i]...)
		if b < 0x20 {
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
		} else {
			dst = append(dst, '\\', b)
		}
		run = i + 1
	}
	return append(dst, s[run:]...)
}
