package quota

import (
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/gateway/store"
)

// TestExplain: each refusal says when to come back, and only a used-up day tells
// the client not to retry on its own (the SDKs would sleep until midnight).
func TestExplain(t *testing.T) {
	now := time.Date(2026, 3, 4, 22, 30, 15, 0, time.UTC)
	tokens := store.Claim{Scope: store.TeamScope("web", store.Tokens), Limit: 1000}
	for _, c := range []struct {
		name   string
		ref    store.Refused
		says   string
		after  time.Duration
		rate   bool
		usedUp bool
	}{
		{"rate", store.Refused{Claim: store.Claim{Scope: store.UserScope("a", store.Requests), Limit: 5, Count: true}, Used: 5}, "your limit of 5 requests a minute", 45 * time.Second, true, false},
		{"held", store.Refused{Claim: tokens, Used: 400, Reserved: 700}, "held by requests in flight", 2 * time.Second, false, false},
		{"used up", store.Refused{Claim: tokens, Used: 1200}, "your team's daily quota of 1000 tokens is used up (1200 used); it renews at 2026-03-05 00:00 UTC", 89*time.Minute + 45*time.Second, false, true},
	} {
		r := Explain(&c.ref, now)
		if !strings.Contains(r.Msg, c.says) || r.RetryAfter != c.after || r.Rate != c.rate || r.UsedUp != c.usedUp {
			t.Errorf("%s: %+v", c.name, r)
		}
	}
}
