package host

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/protocol"
)

// BenchmarkPing is one host.ping round trip through Serve, framing included, with the
// payload echoed: the host's own share of the browser benchmark's round trips.
func BenchmarkPing(b *testing.B) {
	for _, size := range []int{64, 64 << 10, 900 << 10} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			h := newTestHost(b)
			hostIn, client := io.Pipe()
			replies, hostOut := io.Pipe()
			done := make(chan struct{})
			go func() { defer close(done); h.Serve(context.Background(), hostIn, hostOut); hostOut.Close() }()
			defer func() { client.Close(); <-done }()
			payload, _ := json.Marshal(strings.Repeat("x", size))
			msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"host.ping","params":{"payload":` + string(payload) + `}}`)
			frame := binary.NativeEndian.AppendUint32(nil, uint32(len(msg)))
			frame = append(frame, msg...)
			r := bufio.NewReaderSize(replies, 1<<16)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.Write(frame); err != nil {
					b.Fatal(err)
				}
				reply, err := protocol.ReadFrame(r, protocol.MaxInboundFrame)
				if err != nil {
					b.Fatal(err)
				}
				if len(reply) < size {
					b.Fatalf("reply of %d B to a %d B ping: %.100s", len(reply), size, reply)
				}
			}
		})
	}
}
