package origins

import (
	"net/netip"
	"net/url"
	"strings"
	"unicode"

	"golang.org/x/net/idna"
)

// asciiHost is a host in the form the browser's address bar resolves: each label of
// an internationalised name in punycode, so that one site has one spelling.
func asciiHost(h string) string {
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 {
			if a, err := idna.Lookup.ToASCII(h); err == nil {
				return a
			}
			return h
		}
	}
	return h
}

// Display is an origin (or URL) as a person should read it on a card: hosts whose
// labels could pass for another site's (a Cyrillic а in "mаil.test", scripts mixed
// in one label) stay in punycode, as the address bar shows them; a name written in
// one script that imitates no other is shown in its own letters.
func Display(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	h := u.Hostname()
	shown := displayHost(asciiHost(h))
	if shown == h {
		return raw
	}
	if p := u.Port(); p != "" {
		u.Host = shown + ":" + p
	} else {
		u.Host = shown
	}
	return u.String()
}

func displayHost(ascii string) string {
	labels := strings.Split(ascii, ".")
	for i, l := range labels {
		if !strings.HasPrefix(l, "xn--") {
			continue
		}
		uni, err := idna.Display.ToUnicode(l)
		if err != nil || !safeLabel(uni) {
			continue
		}
		labels[i] = uni
	}
	return strings.Join(labels, ".")
}

// lookalike are the scripts whose letters pass for Latin ones.
var lookalike = []*unicode.RangeTable{unicode.Cyrillic, unicode.Greek, unicode.Armenian, unicode.Cherokee}

// safeLabel reports whether a label can be shown in its own letters: one script
// (Han, Hiragana, Katakana and Hangul count as one, with Latin beside them as
// Japanese and Korean names have it), none that imitates Latin.
func safeLabel(l string) bool {
	scripts := map[string]bool{}
	for _, r := range l {
		if r < 0x80 && (r == '-' || unicode.IsDigit(r)) {
			continue
		}
		for _, t := range lookalike {
			if unicode.Is(t, r) {
				return false
			}
		}
		switch {
		case unicode.Is(unicode.Latin, r):
			scripts["latin"] = true
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
			scripts["cjk"] = true
		case unicode.IsLetter(r) || unicode.IsMark(r):
			for name, t := range unicode.Scripts {
				if unicode.Is(t, r) {
					scripts[name] = true
					break
				}
			}
		default:
			return false // symbols and invisible characters in a name
		}
	}
	delete(scripts, "Inherited")
	if scripts["cjk"] {
		delete(scripts, "latin")
	}
	return len(scripts) <= 1
}

// Private reports whether a URL's host is on this machine or a private network (what
// web_fetch reaches only when fetch.allow_private_hosts names it): what it answers is
// the person's, not public.
func Private(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return true
	}
	h := strings.ToLower(u.Hostname())
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || strings.HasSuffix(h, ".local") || strings.HasSuffix(h, ".internal") || !strings.Contains(h, ".") {
		return true
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return false
	}
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified() || a.Is4() && a.As4()[0] == 100 && a.As4()[1]&0xc0 == 64
}
