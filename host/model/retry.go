package model

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error is a failed model call, with what the vendor said and what the user can do
// about it.
type Error struct {
	Provider  string // provider id
	Status    int    // HTTP status; 0 for a network or stream error
	Type      string // the vendor's error type or code, when it gave one
	Message   string // the vendor's message, or what went wrong
	Fix       string // what to do about it
	Retryable bool   // a later try might succeed (rate limit, overload, network)
	// RetryAfter is the wait the vendor asked for, 0 when it named none.
	RetryAfter time.Duration
	Err        error // the underlying error, for errors.Is
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "model provider %q: ", e.Provider)
	if e.Status != 0 {
		fmt.Fprintf(&b, "HTTP %d", e.Status)
		if e.Type != "" {
			fmt.Fprintf(&b, " %s", e.Type)
		}
		b.WriteString(": ")
	} else if e.Type != "" {
		fmt.Fprintf(&b, "%s: ", e.Type)
	}
	b.WriteString(e.Message)
	if e.Fix != "" {
		b.WriteString(" — ")
		b.WriteString(e.Fix)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Retry says how a call is retried.
type Retry struct {
	// MaxRetries is how many tries may follow the first: 4 allows 5 tries in all.
	MaxRetries int
	// BaseDelay is the first backoff; each further one doubles it, up to MaxDelay.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter is the longest Retry-After the call will sleep for; a vendor
	// asking for longer (a spent quota, typically) fails the call at once instead.
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx ends; nil is a real timer. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultRetry is the policy used when a Config gives none.
var DefaultRetry = Retry{MaxRetries: 4, BaseDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second, MaxRetryAfter: 2 * time.Minute}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// backoff is the wait before retry n (0-based): the vendor's Retry-After when it
// named one (it knows when its limit resets), else exponential with "equal jitter"
// (half fixed, half random) so that many clients failing together spread out, yet
// never retry at once.
func (r Retry) backoff(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := r.BaseDelay << min(n, 20)
	if d > r.MaxDelay || d <= 0 {
		d = r.MaxDelay
	}
	return d/2 + rand.N(d/2+1)
}

// parseRetryAfter reads retry-after-ms (OpenAI's, precise) or Retry-After (seconds or
// an HTTP date). 0 means the response named no wait.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// retryableStatus: 408 and 409 (Anthropic and OpenAI ask for retries on both), 429,
// and every 5xx, Anthropic's 529 "overloaded" included.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict || code == http.StatusTooManyRequests || code >= 500
}

// fixFor says what a user can do about a failed status.
func fixFor(status int, p *client) string {
	switch status {
	case http.StatusUnauthorized:
		how := fmt.Sprintf("store the key with `ferry provider add %s … --api-key-stdin`", p.info.ID)
		if p.keyEnv != "" {
			how += fmt.Sprintf(" or set the environment variable %s for the host", p.keyEnv)
		}
		if p.key == "" {
			return "no API key is set for this provider: " + how
		}
		return "the API key was refused (wrong, revoked or for another vendor): " + how
	case http.StatusForbidden:
		return "the key is valid but may not use this model or endpoint: check the account's permissions, region and billing, or choose another model with `ferry provider add " + p.info.ID + " … --model NAME`"
	case http.StatusNotFound:
		return fmt.Sprintf("check the base URL (%s, which should end where the API's paths start, e.g. …/v1 for OpenAI-compatible servers) and the model name (%s)", p.info.BaseURL, p.info.Model)
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return "the vendor refused the request as sent; its message above says which part"
	case http.StatusTooManyRequests:
		return "rate limited or out of quota: wait, raise the account's limits, or use another provider"
	case http.StatusRequestEntityTooLarge:
		return "the request is too large for this model: shorten the conversation or use a model with a larger context window"
	}
	if status >= 500 {
		return "the vendor's server failed; it is usually temporary: try again later"
	}
	return ""
}

// do runs try until it succeeds, fails for good, or the tries run out. try reports
// whether any output reached the caller: a call that already streamed text is not
// retried, since the caller would see it twice.
func (c *client) do(ctx context.Context, onAttempt func(Attempt), try func(ctx context.Context) (*Response, bool, error)) (*Response, error) {
	r := c.retry
	sleep := r.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	for n := 0; ; n++ {
		start := time.Now()
		resp, emitted, err := try(ctx)
		a := Attempt{Duration: time.Since(start)}
		var me *Error
		if errors.As(err, &me) {
			a.Status = me.Status
		} else if err == nil {
			a.Status = http.StatusOK
		}
		if err == nil {
			if onAttempt != nil {
				onAttempt(a)
			}
			return resp, nil
		}
		a.Err = err.Error()
		if ctx.Err() != nil {
			if onAttempt != nil {
				onAttempt(a)
			}
			return nil, ctx.Err()
		}
		retry := me != nil && me.Retryable && !emitted && n < r.MaxRetries
		if retry && r.MaxRetryAfter > 0 && me.RetryAfter > r.MaxRetryAfter {
			retry = false
			me.Message += fmt.Sprintf(" (the vendor asks to wait %s before trying again)", me.RetryAfter.Round(time.Second))
		}
		if !retry {
			if onAttempt != nil {
				onAttempt(a)
			}
			if me != nil && me.Retryable && !emitted && n > 0 {
				me.Message += fmt.Sprintf(" (gave up after %d tries)", n+1)
			}
			return nil, err
		}
		a.Wait = r.backoff(n, me.RetryAfter)
		if onAttempt != nil {
			onAttempt(a)
		}
		if err := sleep(ctx, a.Wait); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
	}
}
