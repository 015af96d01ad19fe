package proxy

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferryhq/ferry/gateway/store"
)

// settler is the part of the store the recorder writes to.
type settler interface {
	Settle(ctx context.Context, batch []store.Settlement) error
}

// maxQueue bounds the answered requests waiting in memory to be written; past
// it new requests are refused (never made to wait) until the writer catches up.
const maxQueue = 4096

// recorder settles and audits answered requests off the answer's path: one
// goroutine writes them in batches, one transaction each. A request's tokens stay
// held until its settlement is written, so a quota is never looser for the delay.
// What the database cannot take goes to the journal, fsynced, and is replayed
// from there in order, behind anything answered later, once the database is
// back; only when the journal cannot take it either does it wait in memory, and
// then new requests are refused: metering never stops while serving goes on.
type recorder struct {
	st    settler
	j     *Journal
	log   zerolog.Logger
	retry time.Duration // between tries of a failing database

	mu      sync.Mutex
	queue   []store.Settlement // answered, in memory only
	spool   []store.Settlement // in the journal, not yet in the database
	writing int                // taken by the writer, not yet finished
	dbDown  bool
	full    error // why the journal took nothing the last time it was asked
	closing bool
	idle    *sync.Cond

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

func newRecorder(st settler, j *Journal, spooled []store.Settlement, log zerolog.Logger) *recorder {
	r := &recorder{st: st, j: j, log: log, retry: time.Second, spool: spooled,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	r.idle = sync.NewCond(&r.mu)
	go r.run()
	return r
}

// add never blocks: admission keeps the queue bounded.
func (r *recorder) add(s store.Settlement) {
	r.mu.Lock()
	r.queue = append(r.queue, s)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// adopt queues settlements already in the journal, behind those there.
func (r *recorder) adopt(spooled []store.Settlement) {
	r.mu.Lock()
	r.spool = append(r.spool, spooled...)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// refusal says why new requests must be refused now, and when to try again:
// usage that cannot be recorded must not be spent.
func (r *recorder) refusal() (string, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.full != nil:
		return "the gateway cannot record usage now (its database is unreachable and its local spool is full); try again later", r.retry * 5
	case len(r.queue) >= maxQueue:
		return "the gateway has too many answers waiting to be recorded; try again in a second", time.Second
	}
	return "", 0
}

// Backlog is what waits to be written: in memory, and in the journal.
func (r *recorder) backlog() (queued, spooled int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue), len(r.spool)
}

func (r *recorder) run() {
	defer close(r.done)
	for {
		r.mu.Lock()
		empty := len(r.queue) == 0 && len(r.spool) == 0
		closing := r.closing
		r.mu.Unlock()
		if empty {
			if closing {
				return
			}
			select {
			case <-r.wake:
			case <-r.stop:
			}
			continue
		}
		if r.step() {
			continue
		}
		if closing {
			return // what is left is in the journal, or could not be kept anywhere
		}
		select {
		case <-time.After(r.retry):
		case <-r.stop:
		}
	}
}

// step writes one batch; false when the database refused it.
func (r *recorder) step() bool {
	r.mu.Lock()
	if len(r.spool) > 0 && len(r.queue) > 0 {
		// Behind what already waits in the journal, so that the order holds.
		r.mu.Unlock()
		// Should the journal be full, the database may still take what waits in it.
		r.spoolQueue()
		r.mu.Lock()
	}
	fromSpool := len(r.spool) > 0
	src := r.queue
	if fromSpool {
		src = r.spool
	}
	batch := src[:min(len(src), 256)]
	r.writing = len(batch)
	r.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := r.st.Settle(ctx, batch)
	cancel()

	if err == nil {
		ids := make([]string, len(batch))
		for i := range batch {
			ids[i] = batch[i].Request.ID
		}
		r.j.Done(ids)
		r.mu.Lock()
		if fromSpool {
			r.spool = drop(r.spool, len(batch))
		} else {
			r.queue = drop(r.queue, len(batch))
		}
		if r.dbDown {
			r.log.Info().Int("waiting", len(r.spool)).Msg("the database is back: writing the usage spooled meanwhile")
		}
		// The database takes writes again: nothing needs the journal's room.
		r.dbDown, r.writing, r.full = false, 0, nil
		if len(r.spool) == 0 {
			if err := r.j.Compact(); err != nil {
				r.log.Warn().Err(err).Msg("compacting the spool")
			}
		}
		r.idle.Broadcast()
		r.mu.Unlock()
		return true
	}
	r.mu.Lock()
	r.writing = 0
	if !r.dbDown {
		r.log.Warn().Err(err).Msg("the database does not take the audit of requests: spooling it to local disk until it is back")
	}
	r.dbDown = true
	r.idle.Broadcast()
	r.mu.Unlock()
	r.spoolQueue()
	return false
}

// spoolQueue moves what waits in memory into the journal; false when the
// journal could not take it.
func (r *recorder) spoolQueue() bool {
	r.mu.Lock()
	q := r.queue
	r.mu.Unlock()
	if len(q) == 0 {
		return true
	}
	err := r.j.Spool(q)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if r.full == nil {
			r.log.Error().Err(err).Int("requests", len(q)).Msg("the spool cannot take the audit of requests: refusing new requests until the database or the disk is back")
		}
		r.full = err
		return false
	}
	r.full = nil
	r.spool = append(r.spool, q...)
	r.queue = drop(r.queue, len(q))
	return true
}

func drop(s []store.Settlement, n int) []store.Settlement {
	if n >= len(s) {
		return nil
	}
	return append([]store.Settlement(nil), s[n:]...)
}

// flush waits until everything answered so far is in the database.
func (r *recorder) flush() {
	r.mu.Lock()
	for len(r.queue)+len(r.spool)+r.writing > 0 {
		r.idle.Wait()
	}
	r.mu.Unlock()
}

// close writes what it can, spools the rest and stops; it tells whether
// anything is left for the next start.
func (r *recorder) close() (left int) {
	r.mu.Lock()
	already := r.closing
	r.closing = true
	r.mu.Unlock()
	if !already {
		close(r.stop)
	}
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) > 0 {
		r.log.Error().Int("requests", len(r.queue)).Msg("stopping with the audit of requests neither in the database nor in the spool: their usage is lost")
	}
	return len(r.queue) + len(r.spool)
}
