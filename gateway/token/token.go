// Package token makes and checks the gateway's user tokens. A token is
// "fgw_" + a public id + "_" + a 256-bit secret. Only the id, a random salt and
// SHA-256(salt, secret) are stored: a fast hash is right for a secret of that
// entropy (a slow one protects guessable passwords, which these are not), and the
// salt keeps two stores' hashes of one secret apart.
package token

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"sync"

	"github.com/ferryhq/ferry/gateway/store"
)

// Prefix starts every token, so that secret scanners and people recognise one.
const Prefix = "fgw_"

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// New makes a token and what the store keeps of it. The token is shown once.
func New() (tok string, h store.TokenHash) {
	var id [10]byte
	var secret [32]byte
	var salt [16]byte
	rand.Read(id[:])
	rand.Read(secret[:])
	rand.Read(salt[:])
	idStr := idEncoding.EncodeToString(id[:])
	sec := base64.RawURLEncoding.EncodeToString(secret[:])
	h = store.TokenHash{ID: idStr, Salt: hex.EncodeToString(salt[:]), Hash: hash(salt[:], sec)}
	return Prefix + idStr + "_" + sec, h
}

func hash(salt []byte, secret string) string {
	d := sha256.New()
	d.Write(salt)
	d.Write([]byte(secret))
	return hex.EncodeToString(d.Sum(nil))
}

// ErrMalformed: the text is not a gateway token at all.
var ErrMalformed = errors.New("not a gateway token")

// Split parses a token into its id and secret.
func Split(tok string) (id, secret string, err error) {
	rest, ok := strings.CutPrefix(tok, Prefix)
	if !ok {
		return "", "", ErrMalformed
	}
	id, secret, ok = strings.Cut(rest, "_")
	if !ok || len(id) != 16 || len(secret) != 43 {
		return "", "", ErrMalformed
	}
	return id, secret, nil
}

// Matches tells, in time that does not depend on where they differ, whether
// secret is the one h was made from.
func Matches(h store.TokenHash, secret string) bool {
	salt, err := hex.DecodeString(h.Salt)
	want, err2 := hex.DecodeString(h.Hash)
	if err != nil || err2 != nil {
		return false
	}
	got, _ := hex.DecodeString(hash(salt, secret))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// Decoy is compared against when a token's id is unknown, so that an unknown id
// costs what a wrong secret does. It is made when first needed: every process that
// links the gateway (the browser's host too) would otherwise pay for it at start.
var Decoy = sync.OnceValue(func() store.TokenHash { _, h := New(); return h })
