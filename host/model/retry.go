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

// failure is one row of the table that decides what a failed call means: whether a
// later try can succeed, and what the person can do. Rows are tried in order; the
// first that matches wins.
type failure struct {
	name  string
	match func(status int, typ, msg string) bool
	retry bool
	fix   func(c *client) string
}

func anyOf(typ string, types ...string) bool {
	for _, t := range types {
		if strings.EqualFold(typ, t) {
			return true
		}
	}
	return false
}

func mentions(msg string, phrases ...string) bool {
	m := strings.ToLower(msg)
	for _, p := range phrases {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

// failures is the one table of the retry decision. Quota, auth and bad requests
// are never retried: the same request fails the same way, and retrying only makes
// the person wait for the error (a spent quota comes as a 429, like a rate limit).
var failures = []failure{
	{"quota", func(status int, typ, msg string) bool {
		return status == http.StatusPaymentRequired ||
			anyOf(typ, "insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "access_terminated", "insufficient_balance", "quota_exceeded") ||
			mentions(msg, "exceeded your current quota", "credit balance is too low", "insufficient balance", "insufficient_quota")
	}, false, func(c *client) string {
		return "the account is out of credit or quota: add credit or raise the quota in the vendor's billing settings, or use another provider (`ferry run --provider ID`)"
	}},
	{"auth", func(status int, typ, _ string) bool {
		return status == http.StatusUnauthorized || anyOf(typ, "authentication_error", "invalid_api_key")
	}, false, func(c *client) string {
		how := fmt.Sprintf("store the key with `ferry provider add %s … --api-key-stdin`", c.info.ID)
		if c.keyEnv != "" {
			how += fmt.Sprintf(" or set the environment variable %s for the host", c.keyEnv)
		}
		if c.key == "" {
			return "no API key is set for this provider: " + how
		}
		return "the API key was refused (wrong, revoked or for another vendor): " + how
	}},
	{"permission", func(status int, typ, _ string) bool {
		return status == http.StatusForbidden || anyOf(typ, "permission_error", "permission_denied")
	}, false, func(c *client) string {
		return "the key is valid but may not use this model or endpoint: check the account's permissions, region and billing, or choose another model with `ferry provider add " + c.info.ID + " … --model NAME`"
	}},
	{"not found", func(status int, typ, _ string) bool {
		return status == http.StatusNotFound || anyOf(typ, "not_found_error", "model_not_found", "NotFoundError", "DeploymentNotFound")
	}, false, func(c *client) string {
		return fmt.Sprintf("check the base URL (%s, which should end where the API's paths start, e.g. …/v1 for OpenAI-compatible servers, …/openai/deployments/NAME with --api-version for classic Azure) and the model name (%s)", c.info.BaseURL, c.info.Model)
	}},
	{"too large", func(status int, typ, msg string) bool {
		return status == http.StatusRequestEntityTooLarge || anyOf(typ, "request_too_large", "context_length_exceeded") ||
			mentions(msg, "maximum context length", "prompt is too long", "context window")
	}, false, func(c *client) string {
		return "the request is too large for this model: shorten the conversation, or set the model's real window with `ferry provider add " + c.info.ID + " --context-window N` so that Ferry compacts in time"
	}},
	{"bad request", func(status int, typ, _ string) bool {
		return status == http.StatusBadRequest || status == http.StatusUnprocessableEntity ||
			anyOf(typ, "invalid_request_error", "BadRequestError", "extra_forbidden", "unsupported_parameter", "invalid_request")
	}, false, func(c *client) string {
		return "the vendor refused the request as sent; its message above says which part (`ferry provider add " + c.info.ID + " --help` lists the request options that can be set)"
	}},
	{"rate limit", func(status int, typ, _ string) bool {
		return status == http.StatusTooManyRequests || anyOf(typ, "rate_limit_error", "rate_limit_exceeded", "requests", "tokens", "RateLimitError")
	}, true, func(c *client) string {
		return "rate limited: wait a little, raise the account's limits, or use another provider"
	}},
	{"overloaded", func(status int, typ, _ string) bool {
		return status == 529 || status == http.StatusServiceUnavailable || anyOf(typ, "overloaded_error", "overloaded", "ServiceUnavailableError")
	}, true, func(c *client) string {
		return "the vendor is overloaded; it is usually brief: try again shortly"
	}},
	{"server", func(status int, typ, _ string) bool {
		return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusConflict ||
			anyOf(typ, "api_error", "server_error", "timeout_error", "internal_error", "InternalServerError", "internal_server_error")
	}, true, func(c *client) string {
		return "the vendor's server failed; it is usually temporary: try again later"
	}},
}

// classify finds a failure's row; nil when no row matches.
func classify(status int, typ, msg string) *failure {
	for i := range failures {
		if failures[i].match(status, typ, msg) {
			return &failures[i]
		}
	}
	return nil
}

// failure is the error of a failed HTTP status.
func (c *client) failure(status int, typ, msg string, retryAfter time.Duration) *Error {
	e := &Error{Provider: c.info.ID, Status: status, Type: typ, Message: msg, RetryAfter: retryAfter}
	if f := classify(status, typ, msg); f != nil {
		e.Retryable, e.Fix = f.retry, f.fix(c)
	}
	return e
}

// streamFailure is an error the vendor reported inside a 200 stream, in any of the
// shapes servers use; code is the HTTP-like number some put in it (vLLM, llama.cpp),
// 0 when none.
func (c *client) streamFailure(code int, typ, msg string) *Error {
	if msg == "" {
		msg = "the vendor reported an error in the middle of the answer"
	}
	e := &Error{Provider: c.info.ID, Type: typ, Message: msg,
		Fix: "the vendor failed while answering; try again (Ferry retries by itself when nothing was shown yet)"}
	if f := classify(code, typ, msg); f != nil {
		e.Retryable = f.retry
		if !f.retry {
			e.Fix = f.fix(c)
		}
	}
	return e
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
