package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/ferryhq/ferry/gateway/store"
)

// ErrJournalFull: the journal has reached its size limit or its disk is full.
var ErrJournalFull = errors.New("the gateway's local spool is full")

// Journal keeps on local disk what the database has not yet acknowledged: each
// request admitted (so that, should the process die with it in flight, the next
// start settles it with its estimate) and each settlement the database could not
// take (fsynced, and replayed in order once the database is back). Each serving
// process has its own file, locked while it lives, in a folder the processes of
// one database share; a process that starts takes over the files of those that
// died.
type Journal struct {
	dir, path string
	lock      *flock.Flock
	max       int64 // bytes the file may hold; past it the journal is full

	mu     sync.Mutex
	f      *os.File
	size   int64
	opened map[string]store.Settlement // admitted, not yet acknowledged
}

// record is one line of a journal.
type record struct {
	Admit *store.Settlement `json:"a,omitempty"`
	Spool *store.Settlement `json:"s,omitempty"`
	Done  []string          `json:"d,omitempty"`
}

// compactAt is the size past which the file is rewritten with only what is still
// open, when nothing waits in it for the database.
const compactAt = 8 << 20

// OpenJournal starts the journal of instance in dir, taking over the journals of
// processes that died: it returns what they left unsettled, in their order,
// already written into the new journal as waiting for the database.
func OpenJournal(dir, instance string, max int64) (*Journal, []store.Settlement, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("creating the spool folder: %w", err)
	}
	j := &Journal{dir: dir, path: filepath.Join(dir, instance+".journal"), max: max, opened: map[string]store.Settlement{}}
	j.lock = flock.New(j.path + ".lock")
	if ok, err := j.lock.TryLock(); err != nil || !ok {
		return nil, nil, fmt.Errorf("locking the spool %s: %v", j.path, err)
	}
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		j.lock.Unlock()
		return nil, nil, fmt.Errorf("opening the spool: %w", err)
	}
	j.f = f
	left, taken, err := j.takeOver()
	if err != nil {
		j.Close()
		return nil, nil, err
	}
	if len(left) > 0 {
		if err := j.Spool(left); err != nil {
			j.Close()
			return nil, nil, fmt.Errorf("taking over the spool of a stopped gateway: %w", err)
		}
	}
	// Only once what they left is safe in this journal do the old ones go.
	for _, p := range taken {
		os.Remove(p)
		os.Remove(p + ".lock")
	}
	return j, left, nil
}

// Adopt takes over the journals of processes that died since this one
// started: what they left is in this journal, waiting for the database, when it
// returns.
func (j *Journal) Adopt() ([]store.Settlement, error) {
	left, taken, err := j.takeOver()
	if err != nil || len(taken) == 0 {
		return nil, err
	}
	if len(left) > 0 {
		if err := j.Spool(left); err != nil {
			return nil, err
		}
	}
	for _, p := range taken {
		os.Remove(p)
		os.Remove(p + ".lock")
	}
	return left, nil
}

// takeOver reads the journals no living process holds.
func (j *Journal) takeOver() ([]store.Settlement, []string, error) {
	paths, _ := filepath.Glob(filepath.Join(j.dir, "*.journal"))
	var left []store.Settlement
	var taken []string
	for _, p := range paths {
		if p == j.path {
			continue
		}
		l := flock.New(p + ".lock")
		if ok, err := l.TryLock(); err != nil || !ok {
			continue // a living gateway's
		}
		s, err := readJournal(p)
		l.Unlock()
		if err != nil {
			return nil, nil, err
		}
		left = append(left, s...)
		taken = append(taken, p)
	}
	return left, taken, nil
}

// readJournal is what a journal left unsettled: the settlements it spooled, then
// the requests it admitted and never settled, charged their estimate.
func readJournal(path string) ([]store.Settlement, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the spool %s: %w", path, err)
	}
	done := map[string]bool{}
	var spooled, admitted []store.Settlement
	for _, line := range bytes.Split(b, []byte("\n")) {
		var r record
		// A line the process was writing when it died is not whole: skipped.
		if len(line) == 0 || json.Unmarshal(line, &r) != nil {
			continue
		}
		switch {
		case r.Admit != nil:
			admitted = append(admitted, *r.Admit)
		case r.Spool != nil:
			spooled = append(spooled, *r.Spool)
		}
		for _, id := range r.Done {
			done[id] = true
		}
	}
	for _, l := range [][]store.Settlement{spooled, admitted} {
		for i := range l {
			r := &l[i].Request
			r.Latency = time.Duration(r.LatencyMS * float64(time.Millisecond))
			r.TTFB = time.Duration(r.TTFBMS * float64(time.Millisecond))
		}
	}
	var out []store.Settlement
	seen := map[string]bool{}
	for _, s := range spooled {
		if !done[s.Request.ID] && !seen[s.Request.ID] {
			seen[s.Request.ID] = true
			out = append(out, s)
		}
	}
	for _, s := range admitted {
		if !done[s.Request.ID] && !seen[s.Request.ID] {
			seen[s.Request.ID] = true
			s.Request.Status = 502
			s.Request.Error = "the gateway stopped during the answer; its tokens are the gateway's estimate of the prompt"
			s.Request.Estimated = true
			out = append(out, s)
		}
	}
	return out, nil
}

func (j *Journal) write(b []byte, sync bool) error {
	if j.size+int64(len(b)) > j.max {
		return ErrJournalFull
	}
	n, err := j.f.Write(b)
	j.size += int64(n)
	if err == nil && sync {
		err = j.f.Sync()
	}
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("%w: %v", ErrJournalFull, err)
		}
		return err
	}
	return nil
}

func line(r record) []byte {
	b, _ := json.Marshal(r)
	return append(b, '\n')
}

// Admit records a request as it goes upstream, with the tokens it is charged
// should the process die before it ends. Not fsynced: it is there for a process
// killed, not for a machine that loses power.
func (j *Journal) Admit(s store.Settlement) error {
	s.Content = nil
	b := line(record{Admit: &s})
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.write(b, false); err != nil {
		return err
	}
	j.opened[s.Request.ID] = s
	return nil
}

// Spool records settlements the database could not take, on disk before it
// returns.
func (j *Journal) Spool(batch []store.Settlement) error {
	var buf bytes.Buffer
	for i := range batch {
		buf.Write(line(record{Spool: &batch[i]}))
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.write(buf.Bytes(), true)
}

// Done records that the database has the settlements of ids.
func (j *Journal) Done(ids []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, id := range ids {
		delete(j.opened, id)
	}
	// A lost mark only means a replay the database recognises and skips.
	j.write(line(record{Done: ids}), false)
}

// Compact rewrites the file with only the requests still open, once it has grown
// and nothing in it waits for the database.
func (j *Journal) Compact() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.size < compactAt {
		return nil
	}
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, s := range j.opened {
		buf.Write(line(record{Admit: &s}))
	}
	if _, err := f.Write(buf.Bytes()); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, j.path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	j.f.Close()
	j.f, j.size = f, int64(buf.Len())
	return nil
}

// Close ends the journal; its file stays for the next start when it holds
// anything unsettled.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	err := j.f.Close()
	j.lock.Unlock()
	return err
}

// Remove deletes the journal's file: everything in it is settled.
func (j *Journal) Remove() {
	os.Remove(j.path)
	os.Remove(j.path + ".lock")
}

// Path is the journal's file.
func (j *Journal) Path() string { return j.path }
