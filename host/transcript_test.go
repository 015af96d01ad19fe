package host

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/ from what the host answers")

// TestTranscripts replays each testdata/*.txtar session against a real host over pipes.
// In a transcript, "-> " lines are frames sent to the host, and the "<- " lines after
// each are the frames it must answer with, in order. Values that differ from run to
// run (pid, times, paths, the version) are replaced with placeholders.
func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txtar")
	if len(files) == 0 {
		t.Fatal("no transcripts in testdata/")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var session *txtar.File
			for i := range ar.Files {
				if ar.Files[i].Name == "session" {
					session = &ar.Files[i]
				}
			}
			if session == nil {
				t.Fatalf("%s has no session section", file)
			}
			got := replay(t, string(session.Data))
			if *update {
				session.Data = []byte(got)
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != string(session.Data) {
				t.Errorf("transcript differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", got, session.Data)
			}
		})
	}
}

func replay(t *testing.T, session string) string {
	dir := t.TempDir()
	db, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h, err := New(db, dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { h.Serve(context.Background(), inR, outW); outW.Close() }()
	defer inW.Close()

	frames := make(chan string)
	go func() {
		for {
			f, err := protocol.ReadFrame(outR, protocol.MaxInboundFrame)
			if err != nil {
				close(frames)
				return
			}
			frames <- string(f)
		}
	}()

	var out strings.Builder
	lines := strings.Split(strings.TrimRight(session, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if !strings.HasPrefix(line, "-> ") {
			continue
		}
		out.WriteString(line + "\n")
		if err := protocol.WriteFrame(inW, []byte(strings.TrimPrefix(line, "-> "))); err != nil {
			t.Fatal(err)
		}
		// Requests are answered one by one, so the transcript is deterministic; the
		// number of answers expected is the number of "<-" lines that follow.
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "<- ") {
			i++
			var f string
			select {
			case got, ok := <-frames:
				if !ok {
					t.Fatalf("host closed the stream; expected %s", lines[i])
				}
				f = got
			case <-time.After(5 * time.Second):
				t.Fatalf("no answer to %s", line)
			}
			out.WriteString("<- " + normalize(f, dir) + "\n")
		}
	}
	return out.String()
}

// normalize rewrites the values that vary between runs and sorts object keys.
func normalize(frame, dataDir string) string {
	var v any
	if err := json.Unmarshal([]byte(frame), &v); err != nil {
		return "NOT JSON: " + frame
	}
	var walk func(any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case map[string]any:
			for k, val := range x {
				switch k {
				case "pid", "uptime_ms", "started_at", "database_bytes":
					x[k] = "$VARIES"
				case "schema_version":
					// Every new migration moves it; what matters is that the host
					// reports the schema this binary carries.
					if val == float64(storage.SchemaVersion()) {
						x[k] = "$SCHEMA_VERSION"
					}
				default:
					x[k] = walk(val)
				}
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case string:
			x = strings.ReplaceAll(x, dataDir, "$DATA_DIR")
			return strings.ReplaceAll(x, buildinfo.Version, "$VERSION")
		}
		return x
	}
	b, _ := json.Marshal(walk(v))
	return string(b)
}
