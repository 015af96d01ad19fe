package proxy

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferryhq/ferry/gateway/store"
)

// recorder settles and audits answered requests off the answer's path: one
// goroutine writes them in batches, one transaction each. A request's tokens stay
// held until its settlement is written, so a quota is never looser for the delay.
type recorder struct {
	st   *store.Store
	log  zerolog.Logger
	ch   chan store.Settlement
	done chan struct{}

	mu      sync.Mutex
	pending int
	idle    *sync.Cond
}

func newRecorder(st *store.Store, log zerolog.Logger) *recorder {
	r := &recorder{st: st, log: log, ch: make(chan store.Settlement, 4096), done: make(chan struct{})}
	r.idle = sync.NewCond(&r.mu)
	go r.run()
	return r
}

func (r *recorder) add(s store.Settlement) {
	r.mu.Lock()
	r.pending++
	r.mu.Unlock()
	r.ch <- s
}

func (r *recorder) run() {
	defer close(r.done)
	for s := range r.ch {
		batch := []store.Settlement{s}
	more:
		for len(batch) < 256 {
			select {
			case s, ok := <-r.ch:
				if !ok {
					break more
				}
				batch = append(batch, s)
			default:
				break more
			}
		}
		r.write(batch)
		r.mu.Lock()
		r.pending -= len(batch)
		if r.pending == 0 {
			r.idle.Broadcast()
		}
		r.mu.Unlock()
	}
}

// write retries a failing database for a while: losing a settlement would keep
// its tokens held and its request unaudited.
func (r *recorder) write(batch []store.Settlement) {
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := r.st.Settle(ctx, batch)
		cancel()
		if err == nil {
			return
		}
		if try == 10 {
			r.log.Error().Err(err).Int("requests", len(batch)).Msg("could not write the audit of requests; their held quota is released when this process stops beating")
			return
		}
		r.log.Warn().Err(err).Msg("writing the audit of requests; retrying")
		time.Sleep(time.Duration(try+1) * 200 * time.Millisecond)
	}
}

func (r *recorder) flush() {
	r.mu.Lock()
	for r.pending > 0 {
		r.idle.Wait()
	}
	r.mu.Unlock()
}

func (r *recorder) close() {
	close(r.ch)
	<-r.done
}
