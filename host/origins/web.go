package origins

import (
	"fmt"
	"net/url"
	"strings"
)

// ParseList reads an origin-list setting (comma-separated): each entry an http(s)
// origin, normalised by Of, in order and without repeats.
func ParseList(v string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		u, err := url.Parse(part)
		o, ok := Of(part)
		if err != nil || !ok || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("%q is not an origin like https://example.com (http or https, no path)", part)
		}
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return out, nil
}

// Of is a URL's origin (scheme://host[:port], lower case, default port
// dropped), for http and https URLs only: other pages have no origin a person
// could have trusted.
func Of(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", false
	}
	host := asciiHost(strings.ToLower(u.Hostname()))
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	port := u.Port()
	if port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https" {
		port = ""
	}
	o := strings.ToLower(u.Scheme) + "://" + host
	if port != "" {
		o += ":" + port
	}
	return o, true
}

// CheckList is the check of an origin-list setting: ParseList accepts it.
func CheckList(v string) error {
	_, err := ParseList(v)
	return err
}

// Normalize normalises each entry of an origin list read from a setting the way Of
// does (so HTTPS://Example.com:443/ matches https://example.com); an entry that is
// not an http(s) origin is kept as written, less a trailing slash, so that a list
// stored before it was checked still refuses what it named.
func Normalize(list []string) []string {
	out := make([]string, len(list))
	for i, v := range list {
		if o, ok := Of(v); ok {
			out[i] = o
		} else {
			out[i] = strings.TrimSuffix(strings.TrimSpace(v), "/")
		}
	}
	return out
}
