package model

import (
	"net/url"
	"strings"
)

// CheckBaseURL refuses a provider base URL that ferry cannot call, or that holds a
// credential. A key in the URL (https://user:key@host) is printed by every listing
// and error, kept in shell histories and sent to every proxy in the clear; keys go
// through --api-key-stdin (kept as a host secret) or --api-key-env instead. Its
// errors show the URL as RedactURL does, never whole.
func CheckBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalidf("base URL %q: give an http:// or https:// URL, e.g. https://api.openai.com/v1, http://localhost:11434/v1 or https://api.anthropic.com", RedactURL(raw))
	}
	if u.User != nil {
		return invalidf("base URL %q holds credentials (user:password@); give the URL without them and the key on stdin: `--base-url %s --api-key-stdin`",
			RedactURL(raw), withoutUser(u))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return invalidf("base URL %q: leave out the query and fragment; the path of the API call is added to it (a key goes on stdin with --api-key-stdin)", RedactURL(raw))
	}
	return nil
}

func withoutUser(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// RedactURL is raw fit to print: credentials become "***", a query's values and a
// fragment "…", also when the URL does not parse (a credential is then whatever
// precedes the last "@" of the part after "//").
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		c := *u
		if c.User != nil {
			c.User = url.User("***")
		}
		if c.RawQuery != "" {
			q := c.Query()
			for k := range q {
				q[k] = []string{"…"}
			}
			c.RawQuery = q.Encode()
		}
		if c.Fragment != "" {
			c.Fragment, c.RawFragment = "…", ""
		}
		return strings.Replace(c.String(), "%2A%2A%2A@", "***@", 1)
	}
	scheme, rest, ok := strings.Cut(raw, "//")
	if !ok {
		if at := strings.LastIndex(raw, "@"); at >= 0 {
			return "***" + raw[at:]
		}
		return raw
	}
	authority, path, _ := strings.Cut(rest, "/")
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		authority = "***" + authority[at:]
	}
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i] + "?…"
	}
	out := scheme + "//" + authority
	if path != "" || strings.Contains(rest, "/") {
		out += "/" + path
	}
	return out
}
