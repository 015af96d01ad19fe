package protocol

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

type chunkParams struct {
	ID    string `json:"id"`
	Index int    `json:"index"`
	Count int    `json:"count"`
	Data  string `json:"data"`
}

// reassemble plays the extension's part: it parses every chunk frame and joins the data.
func reassemble(t testing.TB, frames [][]byte, limit int) string {
	t.Helper()
	var sb strings.Builder
	for i, f := range frames {
		if len(f) > limit {
			t.Fatalf("chunk %d is %d bytes, over the %d limit", i, len(f), limit)
		}
		var m struct {
			JSONRPC string      `json:"jsonrpc"`
			Method  string      `json:"method"`
			Params  chunkParams `json:"params"`
		}
		if err := json.Unmarshal(f, &m); err != nil {
			t.Fatalf("chunk %d is not JSON: %v", i, err)
		}
		if m.Method != ChunkMethod || m.Params.Index != i || m.Params.Count != len(frames) || m.Params.ID != "c1" {
			t.Fatalf("chunk %d has header %+v", i, m)
		}
		sb.WriteString(m.Params.Data)
	}
	return sb.String()
}

func TestSplitOutboundSmallMessageIsOneFrame(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	frames := SplitOutbound(msg, "c1", MaxOutboundFrame)
	if len(frames) != 1 || string(frames[0]) != string(msg) {
		t.Fatalf("frames = %q", frames)
	}
}

func TestSplitOutboundLargeMessages(t *testing.T) {
	payloads := map[string]string{
		"ascii":         strings.Repeat("a", 5<<20),
		"all escaped":   strings.Repeat(`"\`, 2<<20),
		"multibyte":     strings.Repeat("✓é中😀", 300000),
		"control chars": strings.Repeat("\x01\n\t", 500000),
		"mixed":         strings.Repeat("0123456789\"\\✓.", 200000),
	}
	for name, payload := range payloads {
		t.Run(name, func(t *testing.T) {
			msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "result": map[string]string{"payload": payload}})
			frames := SplitOutbound(msg, "c1", MaxOutboundFrame)
			if len(frames) < 2 {
				t.Fatalf("a %d-byte message was not chunked", len(msg))
			}
			got := reassemble(t, frames, MaxOutboundFrame)
			if got != string(msg) {
				t.Fatalf("reassembled message differs from the original (%d vs %d bytes)", len(got), len(msg))
			}
		})
	}
}

func TestSplitOutboundNeverSplitsACharacter(t *testing.T) {
	msg := []byte(strings.Repeat("😀", 1000)) // 4-byte characters
	for limit := 200; limit < 260; limit++ {
		frames := SplitOutbound(msg, "c1", limit+chunkEnvelopeMax)
		for i, f := range frames {
			var m struct{ Params chunkParams }
			if err := json.Unmarshal(f, &m); err != nil {
				t.Fatal(err)
			}
			if !utf8.ValidString(m.Params.Data) || strings.ContainsRune(m.Params.Data, utf8.RuneError) {
				t.Fatalf("limit %d chunk %d cuts a character", limit, i)
			}
		}
	}
}

func FuzzSplitOutbound(f *testing.F) {
	f.Add([]byte(`{"a":"\"\\✓"}`), uint16(10))
	f.Add([]byte(strings.Repeat("é", 100)), uint16(3))
	f.Fuzz(func(t *testing.T, msg []byte, extra uint16) {
		if !utf8.Valid(msg) {
			return // the host only sends what json.Marshal produced: valid UTF-8
		}
		limit := chunkEnvelopeMax + 8 + int(extra%512)
		frames := SplitOutbound(msg, "c1", limit)
		if len(frames) == 1 && len(msg) <= limit {
			if string(frames[0]) != string(msg) {
				t.Fatal("small message altered")
			}
			return
		}
		if got := reassemble(t, frames, limit); got != string(msg) {
			t.Fatalf("reassembled %q, want %q", got, msg)
		}
	})
}

func BenchmarkSplitOutbound5MiB(b *testing.B) {
	msg, _ := json.Marshal(map[string]string{"payload": strings.Repeat("0123456789\"\\✓.", 5<<20/16)})
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		SplitOutbound(msg, "c1", MaxOutboundFrame)
	}
}
