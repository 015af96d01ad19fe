// Package auth holds a serving process's view of the configuration (users by
// token, teams, upstreams, routes, settings) and authenticates requests against
// it. A Snapshot is immutable: the process swaps in a new one when the stored
// generation changes, so a request reads one consistent configuration without
// touching the database.
package auth

import (
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/ferryhq/ferry/gateway/settings"
	"github.com/ferryhq/ferry/gateway/store"
	"github.com/ferryhq/ferry/gateway/token"
)

// Snapshot is one generation of the configuration, indexed.
type Snapshot struct {
	Generation int64
	Users      map[string]*store.User // by name
	byToken    map[string]*store.User // by token id
	Teams      map[string]*store.Team
	Upstreams  map[string]*store.Upstream
	Routes     map[string]*store.Route
	Settings   settings.Values
	Prices     map[string]*store.Price // by upstream model
	keys       map[string]*store.Key   // by token id
	// Now is the clock keys expire by.
	Now func() time.Time
}

// NewSnapshot indexes a configuration.
func NewSnapshot(c *store.Config) *Snapshot {
	s := &Snapshot{Generation: c.Generation, Users: map[string]*store.User{}, byToken: map[string]*store.User{},
		Teams: map[string]*store.Team{}, Upstreams: map[string]*store.Upstream{}, Routes: map[string]*store.Route{},
		Settings: settings.Values(c.Settings), Prices: map[string]*store.Price{}, keys: map[string]*store.Key{}, Now: time.Now}
	for i := range c.Keys {
		s.keys[c.Keys[i].TokenID] = &c.Keys[i]
	}
	for i := range c.Prices {
		s.Prices[c.Prices[i].Model] = &c.Prices[i]
	}
	for i := range c.Users {
		u := &c.Users[i]
		s.Users[u.Name], s.byToken[u.TokenID] = u, u
	}
	for i := range c.Teams {
		s.Teams[c.Teams[i].Name] = &c.Teams[i]
	}
	for i := range c.Upstreams {
		s.Upstreams[c.Upstreams[i].Name] = &c.Upstreams[i]
	}
	for i := range c.Routes {
		s.Routes[c.Routes[i].Model] = &c.Routes[i]
	}
	return s
}

// Errors of authentication.
var (
	ErrNoToken  = errors.New("no token: send it as Authorization: Bearer fgw_… or x-api-key: fgw_…")
	ErrBadToken = errors.New("the token is not valid: it may have been rotated or removed; ask a gateway admin for a new one")
	ErrDisabled = errors.New("this user is disabled; ask a gateway admin")
	ErrExpired  = errors.New("this key has expired; ask a gateway admin for a new one")
)

// Credential is the token a request presents: Authorization: Bearer (OpenAI's
// clients) or x-api-key (Anthropic's).
func Credential(h http.Header) string {
	if v, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	return strings.TrimSpace(h.Get("x-api-key"))
}

// Authenticate finds the user whose token tok is. A disabled user is returned
// with ErrDisabled.
func (s *Snapshot) Authenticate(tok string) (*store.User, error) {
	if tok == "" {
		return nil, ErrNoToken
	}
	id, secret, err := token.Split(tok)
	if err != nil {
		return nil, ErrBadToken
	}
	u := s.byToken[id]
	if u == nil {
		if k := s.keys[id]; k != nil {
			return s.byKey(k, secret)
		}
		token.Matches(token.Decoy(), secret)
		return nil, ErrBadToken
	}
	if !token.Matches(store.TokenHash{ID: u.TokenID, Salt: u.TokenSalt, Hash: u.TokenHash}, secret) {
		return nil, ErrBadToken
	}
	if u.Disabled {
		return u, ErrDisabled
	}
	return u, nil
}

// byKey authenticates a user's further key: the user as it stands, marked
// with the key.
func (s *Snapshot) byKey(k *store.Key, secret string) (*store.User, error) {
	if !token.Matches(store.TokenHash{ID: k.TokenID, Salt: k.TokenSalt, Hash: k.TokenHash}, secret) {
		return nil, ErrBadToken
	}
	owner := s.Users[k.User]
	if owner == nil {
		return nil, ErrBadToken
	}
	u := *owner
	u.Key, u.KeyID = k.Name, k.TokenID
	if k.Expired(s.Now()) {
		return &u, ErrExpired
	}
	if u.Disabled {
		return &u, ErrDisabled
	}
	return &u, nil
}

// StillValid tells whether a request authenticated as u under an earlier
// snapshot may go on under this one: the user is there, enabled, with the same
// token, or the same key, not removed.
func (s *Snapshot) StillValid(u *store.User) bool {
	now := s.Users[u.Name]
	if now == nil || now.Disabled {
		return false
	}
	if u.KeyID != "" {
		k := s.keys[u.KeyID]
		return k != nil && !k.Expired(s.Now())
	}
	return now.TokenID == u.TokenID
}

// ModelsFor lists the routed models u may call, by name.
func (s *Snapshot) ModelsFor(u *store.User) []*store.Route {
	var out []*store.Route
	for _, r := range s.Routes {
		if u.MayUse(r.Model) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}
