package proxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferryhq/ferry/gateway/store"
)

// fakeDB is a database that can be taken down; it keeps what it took, in order.
type fakeDB struct {
	mu   sync.Mutex
	down bool
	got  []string
	seen map[string]int
}

func (f *fakeDB) Settle(ctx context.Context, batch []store.Settlement) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errors.New("connection refused")
	}
	if f.seen == nil {
		f.seen = map[string]int{}
	}
	for _, s := range batch {
		f.seen[s.Request.ID]++
		f.got = append(f.got, s.Request.ID)
	}
	return nil
}

func (f *fakeDB) setDown(v bool) { f.mu.Lock(); f.down = v; f.mu.Unlock() }

func settlement(i int) store.Settlement {
	id := fmt.Sprintf("req%06d", i)
	return store.Settlement{Reservation: &store.Reservation{ID: id, Claims: []store.Claim{{Scope: "user:a:tokens", Amount: 100, Limit: 1000}}},
		Request: store.Request{ID: id, User: "a", InputTokens: int64(i), OutputTokens: 1, Status: 200}}
}

// TestOutageSpoolsAndReplaysInOrder: with the database down for minutes, more
// answers than the queue holds are recorded without a handler waiting: every
// settlement is on disk (a process killed now would hand them to the next),
// and once the database is back each reaches it once, in order, holds included.
func TestOutageSpoolsAndReplaysInOrder(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		db := &fakeDB{down: true}
		j, left, err := OpenJournal(dir, "one", 1<<30)
		if err != nil || len(left) != 0 {
			t.Fatal(err, left)
		}
		r := newRecorder(db, j, nil, zerolog.Nop())
		defer r.close()
		const n = 2*maxQueue + 100
		for i := 0; i < n; i++ {
			r.add(settlement(i)) // a blocking add would deadlock the bubble
		}
		synctest.Wait()
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		if q, s := r.backlog(); q != 0 || s != n {
			t.Fatalf("during the outage: %d in memory, %d spooled; want 0 and %d", q, s, n)
		}
		if msg, _ := r.refusal(); msg != "" {
			t.Fatalf("refused with room in the spool: %s", msg)
		}
		onDisk, err := readJournal(j.Path())
		if err != nil || len(onDisk) != n || onDisk[0].Request.ID != "req000000" || onDisk[n-1].Request.ID != fmt.Sprintf("req%06d", n-1) {
			t.Fatalf("the journal holds %d settlements (%v)", len(onDisk), err)
		}
		if onDisk[7].Reservation == nil || onDisk[7].Reservation.Claims[0].Amount != 100 || onDisk[7].Request.InputTokens != 7 {
			t.Fatalf("a spooled settlement lost its hold or usage: %+v", onDisk[7])
		}

		db.setDown(false)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if len(db.got) != n {
			t.Fatalf("the database got %d of %d", len(db.got), n)
		}
		for i, id := range db.got {
			if id != fmt.Sprintf("req%06d", i) || db.seen[id] != 1 {
				t.Fatalf("replay out of order or twice at %d: %s (%d times)", i, id, db.seen[id])
			}
		}
		if left := r.close(); left != 0 {
			t.Fatalf("%d left after the replay", left)
		}
		j.Close()
	})
}

// TestJournalFullRefuses: when the database is down and the spool cannot take
// more (disk full), nothing is dropped and new requests are refused with a
// Retry-After, until the database is back.
func TestJournalFullRefuses(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		db := &fakeDB{down: true}
		j, _, err := OpenJournal(dir, "one", 4096)
		if err != nil {
			t.Fatal(err)
		}
		r := newRecorder(db, j, nil, zerolog.Nop())
		defer r.close()
		for i := 0; i < 40; i++ {
			r.add(settlement(i))
			synctest.Wait()
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		msg, wait := r.refusal()
		if msg == "" || wait <= 0 {
			t.Fatalf("a full spool with the database down does not refuse: %q %v", msg, wait)
		}
		q, s := r.backlog()
		if q+s != 40 || s == 0 || q == 0 {
			t.Fatalf("%d in memory, %d spooled: want 40 in all, some in each", q, s)
		}
		db.setDown(false)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if len(db.got) != 40 {
			t.Fatalf("the database got %d of 40", len(db.got))
		}
		if msg, _ := r.refusal(); msg != "" {
			t.Fatalf("still refusing with the database back: %s", msg)
		}
		r.close()
		j.Close()
	})
}

// TestJournalTakeOver: a journal left by a process that died is read by the
// next: its spooled settlements, then its admitted requests that never
// settled, charged their estimate; settled ones are not charged again.
func TestJournalTakeOver(t *testing.T) {
	dir := t.TempDir()
	j, _, err := OpenJournal(dir, "dead", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	// A living process's journal is not taken.
	live, _, err := OpenJournal(dir, "live", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	live.Admit(settlement(7))
	for i := 0; i < 3; i++ {
		a := settlement(i)
		a.Request.Status, a.Request.Estimated = 0, true
		j.Admit(a)
	}
	j.Done([]string{"req000001"})
	j.Spool([]store.Settlement{settlement(2)})
	// The process dies here: its lock goes with it, its file stays.
	j.f.Close()
	j.lock.Unlock()

	j2, left, err := OpenJournal(dir, "next", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if _, err := os.Stat(live.Path()); err != nil || len(left) != 2 || left[0].Request.ID != "req000002" || left[0].Request.Status != 200 ||
		left[1].Request.ID != "req000000" || left[1].Request.Status != 502 || !left[1].Request.Estimated || left[1].Request.InputTokens != 0 {
		t.Fatalf("taken over: %+v", left)
	}
	// What was taken over is in the new journal before the old one goes.
	again, _ := readJournal(j2.Path())
	if len(again) != 2 {
		t.Fatalf("the new journal holds %d", len(again))
	}
}
