package store

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// The operator's key that seals upstream keys at rest: 32 bytes, base64, in the
// environment of every process that opens the database, or in a file it names.
// The previous key, during a rotation, is read from the _OLD variables.
const (
	SecretKeyEnv     = "FERRY_GATEWAY_SECRET_KEY"
	SecretKeyFileEnv = "FERRY_GATEWAY_SECRET_KEY_FILE"
	OldSecretKeyEnv  = "FERRY_GATEWAY_SECRET_KEY_OLD"
)

// sealedPrefix starts a sealed value: "sealed:v1:KEYID:BASE64(nonce|ciphertext)".
// KEYID names the key (a hash of it), so that a rotation knows which opens it.
const sealedPrefix = "sealed:v1:"

// sealer seals with the current key and opens with it or the previous one.
type sealer struct {
	current *sealKey
	old     *sealKey
}

type sealKey struct {
	id   string
	aead cipher.AEAD
}

func newSealKey(b64, from string) (*sealKey, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil || len(raw) != 32 {
		return nil, errorf(ErrInvalid, "%s must be 32 random bytes in base64 (e.g. openssl rand -base64 32)", from)
	}
	block, _ := aes.NewCipher(raw)
	aead, _ := cipher.NewGCM(block)
	sum := sha256.Sum256(raw)
	return &sealKey{id: hex.EncodeToString(sum[:4]), aead: aead}, nil
}

// sealerFromEnv reads the operator's keys; nil when none is given (keys are
// then stored as they are, as before).
func sealerFromEnv() (*sealer, error) {
	cur := os.Getenv(SecretKeyEnv)
	from := SecretKeyEnv
	if f := os.Getenv(SecretKeyFileEnv); f != "" && cur == "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", SecretKeyFileEnv, err)
		}
		cur, from = string(b), f
	}
	if cur == "" {
		return nil, nil
	}
	s := &sealer{}
	var err error
	if s.current, err = newSealKey(cur, from); err != nil {
		return nil, err
	}
	if o := os.Getenv(OldSecretKeyEnv); o != "" {
		if s.old, err = newSealKey(o, OldSecretKeyEnv); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *sealer) seal(plain string) string {
	if s == nil || plain == "" {
		return plain
	}
	nonce := make([]byte, s.current.aead.NonceSize())
	rand.Read(nonce)
	ct := s.current.aead.Seal(nonce, nonce, []byte(plain), nil)
	return sealedPrefix + s.current.id + ":" + base64.StdEncoding.EncodeToString(ct)
}

// open reads a stored value: sealed ones with the key that sealed them, others
// as they are.
func (s *sealer) open(stored string) (string, error) {
	rest, ok := strings.CutPrefix(stored, sealedPrefix)
	if !ok {
		return stored, nil
	}
	id, b64, _ := strings.Cut(rest, ":")
	var k *sealKey
	if s != nil {
		for _, c := range []*sealKey{s.current, s.old} {
			if c != nil && c.id == id {
				k = c
			}
		}
	}
	if k == nil {
		return "", fmt.Errorf("it is sealed with key %s, which neither %s nor %s holds", id, SecretKeyEnv, OldSecretKeyEnv)
	}
	ct, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(ct) < k.aead.NonceSize() {
		return "", fmt.Errorf("its sealed value is damaged")
	}
	plain, err := k.aead.Open(nil, ct[:k.aead.NonceSize()], ct[k.aead.NonceSize():], nil)
	if err != nil {
		return "", fmt.Errorf("its sealed value does not open with key %s", id)
	}
	return string(plain), nil
}

// Reseal seals every upstream key with the current operator key: after a
// rotation (the new key current, the old one in _OLD) and to seal keys stored
// before there was one. It returns how many it sealed anew.
func (s *Store) Reseal(ctx context.Context, actor string) (int, error) {
	if s.seal == nil {
		return 0, errorf(ErrInvalid, "set %s (or %s) to the key that seals upstream keys", SecretKeyEnv, SecretKeyFileEnv)
	}
	ups, err := s.Upstreams(ctx, true)
	if err != nil {
		return 0, err
	}
	n := 0
	err = s.change(ctx, actor, "upstream.reseal", "", nil, func(t *sql.Tx) error {
		for _, u := range ups {
			if u.APIKey == "" {
				continue
			}
			if _, err := t.ExecContext(ctx, s.q(`UPDATE upstreams SET api_key = ? WHERE name = ?`), s.seal.seal(u.APIKey), u.Name); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
