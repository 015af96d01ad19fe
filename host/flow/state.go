package flow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
)

// Bounds on what one conversation's state keeps, so that it stays small enough to
// be written after every call. Past them the oldest go: a URL forgotten only means a
// confirmation where none was needed.
const (
	maxSeen     = 20000
	maxSaidText = 256 << 10
	maxSet      = 2000
)

// Label is what one source has put into a conversation's context.
type Label struct {
	// Private: the person's own data (a signed-in page, the workspace, the tab list,
	// their answers), as opposed to what anyone could fetch.
	Private bool `json:"private,omitempty"`
	// Untrusted: text the person did not write, which may carry instructions.
	Untrusted bool `json:"untrusted,omitempty"`
}

// State is what the host knows of one conversation's context: the designated set
// (what the person named), the labels of what entered it, and the run's own write
// set (files it created, tabs it opened). It only grows (except the write set, as
// files and tabs go), is kept with the conversation, and survives a host restart.
type State struct {
	// Designated holds origins ("https://example.com") and sites ("site:example.com",
	// a host named without scheme, any port and scheme).
	Designated map[string]bool `json:"designated,omitempty"`
	// Sources labels every source whose content entered the context: an origin, or
	// one of the Source constants.
	Sources map[string]Label `json:"sources,omitempty"`
	// Seen holds the hashes of URLs that occur verbatim in content already in the
	// context: opening one carries nothing the content did not have.
	Seen     map[string]bool `json:"seen,omitempty"`
	SeenList []string        `json:"seen_order,omitempty"` // oldest first, for the bound
	// Said is the person's own words (messages, ask_user answers), newest last.
	Said []string `json:"said,omitempty"`
	// Created are workspace files this conversation created; Named those the person
	// named (which it may overwrite); Tabs the tabs it opened.
	Created map[string]bool `json:"created,omitempty"`
	Named   map[string]bool `json:"named,omitempty"`
	Tabs    map[int]bool    `json:"tabs,omitempty"`
	// Picked are values the person chose among options someone else wrote: each may
	// go anywhere as a whole, and no part of it is the person's words.
	Picked map[string]bool `json:"picked,omitempty"`
	// Activated are origins of tabs a run brought to the front: the person's next
	// message does not designate them for being there.
	Activated map[string]bool `json:"activated,omitempty"`
}

func newState() *State {
	return &State{Designated: map[string]bool{}, Sources: map[string]Label{}, Seen: map[string]bool{},
		Created: map[string]bool{}, Named: map[string]bool{}, Tabs: map[int]bool{}, Picked: map[string]bool{}, Activated: map[string]bool{}}
}

func decodeState(b []byte) *State {
	st := newState()
	if len(b) == 0 || json.Unmarshal(b, st) != nil {
		return newState()
	}
	if st.Designated == nil {
		st.Designated = map[string]bool{}
	}
	if st.Sources == nil {
		st.Sources = map[string]Label{}
	}
	if st.Seen == nil {
		st.Seen = map[string]bool{}
	}
	if st.Created == nil {
		st.Created = map[string]bool{}
	}
	if st.Named == nil {
		st.Named = map[string]bool{}
	}
	if st.Tabs == nil {
		st.Tabs = map[int]bool{}
	}
	if st.Picked == nil {
		st.Picked = map[string]bool{}
	}
	if st.Activated == nil {
		st.Activated = map[string]bool{}
	}
	return st
}

// label adds what a source put into the context; it reports whether that is new.
func (st *State) label(source string, l Label) bool {
	if source == "" {
		return false
	}
	old, ok := st.Sources[source]
	merged := Label{Private: old.Private || l.Private, Untrusted: old.Untrusted || l.Untrusted}
	if ok && merged == old {
		return false
	}
	st.Sources[source] = merged
	return true
}

// untrusted reports whether any text the person did not write is in the context.
func (st *State) untrusted() bool {
	for _, l := range st.Sources {
		if l.Untrusted {
			return true
		}
	}
	return false
}

func urlKey(u string) string {
	s := sha256.Sum256([]byte(u))
	return hex.EncodeToString(s[:16])
}

// see remembers a URL that occurs in content of the context.
func (st *State) see(u string) bool {
	k := urlKey(u)
	if st.Seen[k] {
		return false
	}
	st.Seen[k] = true
	st.SeenList = append(st.SeenList, k)
	for len(st.SeenList) > maxSeen {
		delete(st.Seen, st.SeenList[0])
		st.SeenList = st.SeenList[1:]
	}
	return true
}

func (st *State) seen(u string) bool {
	if st.Seen[urlKey(u)] {
		return true
	}
	// The same URL as the model wrote it back normalised (a trailing slash added to
	// a bare origin, say).
	if p, err := url.Parse(u); err == nil {
		if n := p.String(); n != u && st.Seen[urlKey(n)] {
			return true
		}
		if p.Path == "" {
			p.Path = "/"
			return st.Seen[urlKey(p.String())]
		}
	}
	return false
}

// say keeps the person's own words.
func (st *State) say(text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	st.Said = append(st.Said, text)
	total := 0
	for _, s := range st.Said {
		total += len(s)
	}
	for total > maxSaidText && len(st.Said) > 1 {
		total -= len(st.Said[0])
		st.Said = st.Said[1:]
	}
}

// pick keeps a value the person chose among options.
func (st *State) pick(v string) bool {
	if v == "" || st.Picked[v] {
		return false
	}
	bounded(st.Picked, v)
	return true
}

func (st *State) picked(v string) bool { return st.Picked[v] }

// said reports whether text is the person's own words: a whole message of theirs,
// or words of one, starting and ending at word boundaries (a digit inside a number
// the person typed is not theirs to send: a run could spell out any number a
// character a call).
func (st *State) said(text string) bool {
	if text == "" {
		return true
	}
	t := strings.TrimSpace(text)
	for _, s := range st.Said {
		if strings.TrimSpace(s) == t && t != "" {
			return true
		}
		for i := 0; ; {
			j := strings.Index(s[i:], t)
			if j < 0 {
				break
			}
			at := i + j
			if boundary(s, at, true) && boundary(s, at+len(t), false) {
				return true
			}
			i = at + 1
		}
	}
	return false
}

// boundary reports whether position i of s starts (or ends) a word: what is beside
// it is no letter or digit.
func boundary(s string, i int, start bool) bool {
	var r rune
	if start {
		if i == 0 {
			return true
		}
		r, _ = utf8.DecodeLastRuneInString(s[:i])
	} else {
		if i >= len(s) {
			return true
		}
		r, _ = utf8.DecodeRuneInString(s[i:])
	}
	return !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

// designated reports whether the person designated origin for this conversation.
func (st *State) designated(origin string) bool {
	if origin == "" {
		return false
	}
	if st.Designated[origin] {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	h := strings.ToLower(u.Hostname())
	return st.Designated["site:"+h] || st.Designated["site:"+strings.TrimPrefix(h, "www.")] || st.Designated["site:"+h+":"+u.Port()]
}

func bounded[K comparable](m map[K]bool, k K) {
	if len(m) >= maxSet {
		for old := range m {
			delete(m, old)
			break
		}
	}
	m[k] = true
}

// OriginOf is the origin a URL loads from: scheme://host[:port] for http(s) (hosts
// in the address bar's punycode), "file://" for files on this machine, file://HOST
// for a file share on another, "" for anything else (about:, data:, a bad URL).
func OriginOf(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if h := strings.ToLower(u.Hostname()); h != "" && h != "localhost" {
			// A UNC path (file://server/share): Windows opens it over the network.
			return "file://" + h
		}
		return SourceLocalFiles
	case "http", "https":
		if u.Hostname() == "" {
			return ""
		}
		// Credentials in the URL do not change where it goes.
		u.User = nil
		if o, ok := origins.Of(u.String()); ok {
			return o
		}
	}
	return ""
}

// destination is where a URL would send what it carries: its origin, "" for what
// stays on this machine or carries nothing (a local file, about:), and for anything
// else an unknown destination, which the rule treats as undesignated.
func destination(raw string) string {
	if o := OriginOf(raw); o != "" {
		if o == SourceLocalFiles {
			return ""
		}
		return o
	}
	if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && strings.EqualFold(u.Scheme, "about") {
		return ""
	}
	return tools.DestUnknown
}

var (
	urlRe = regexp.MustCompile(`(?i)\b(?:https?|file)://[^\s<>"'\x60\\]+`)
	// A bare host the person named: labels of letters, digits and hyphens, and a
	// top-level domain people type (file names like notes.md are not sites).
	hostRe = regexp.MustCompile(`(?i)(?:^|[\s(\["'])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:com|org|net|edu|gov|io|dev|app|ai|co|uk|de|fr|es|it|nl|eu|cn|tw|hk|jp|kr|in|ru|br|ca|au|info|biz|me|tv|xyz|site|online|test|example)(?::\d{1,5})?)(?:$|[\s.,;:!?)\]"'/])`)
	// A workspace path the person named: a word with a slash or an extension.
	pathRe = regexp.MustCompile(`(?:^|[\s(\["'\x60])(/?(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z0-9]{1,8})(?:$|[\s,;:!?)\]"'\x60]|\.(?:$|\s))`)
	// Links of Markdown content ([text](url)), absolute or relative.
	mdLinkRe = regexp.MustCompile(`\]\(([^()\s]+)\)`)
)

// trimURL drops the punctuation that ends a sentence after a URL.
func trimURL(u string) string {
	return strings.TrimRight(u, ".,;:!?)]}*_")
}

// urlsIn finds the absolute URLs in text and, with base, the Markdown links
// resolved against it.
func urlsIn(text, base string) []string {
	var out []string
	for _, m := range urlRe.FindAllString(text, -1) {
		out = append(out, m, trimURL(m))
	}
	if base == "" {
		return out
	}
	b, err := url.Parse(base)
	if err != nil {
		return out
	}
	for _, m := range mdLinkRe.FindAllStringSubmatch(text, -1) {
		if r, err := b.Parse(m[1]); err == nil {
			out = append(out, r.String())
		}
	}
	return out
}

// designate records what the person's message names: the origins of its URLs and
// the sites it names by host, and the workspace paths.
func (st *State) designate(text string) {
	for _, u := range urlsIn(text, "") {
		if o := OriginOf(u); o != "" && o != SourceLocalFiles {
			st.Designated[o] = true
		}
		st.see(u)
	}
	for _, m := range hostRe.FindAllStringSubmatch(text, -1) {
		h := strings.ToLower(strings.TrimPrefix(strings.ToLower(m[1]), "www."))
		st.Designated["site:"+h] = true
	}
	for _, m := range pathRe.FindAllStringSubmatch(text, -1) {
		if strings.Contains(m[1], "://") {
			continue
		}
		if p, err := storage.CleanPath(m[1]); err == nil && p != "/" {
			bounded(st.Named, p)
		}
	}
}

// privateFor lists the private sources the context holds that a send to dest could
// carry: every one, dest's own too, unless dest started the run (its own data goes
// back to it freely).
func (st *State) privateFor(dest, starter string) []string {
	var out []string
	for s, l := range st.Sources {
		if !l.Private || (s == dest && dest == starter) {
			continue
		}
		// The search engine the person set hears of the pages they designated: their
		// choice of engine is their trust in it with what they read (README: Known
		// limits), and no attacker reads its queries.
		if dest == DestSearch && st.designated(s) {
			continue
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
