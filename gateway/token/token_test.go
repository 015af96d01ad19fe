package token

import (
	"strings"
	"testing"
)

func TestTokenRoundTrip(t *testing.T) {
	tok, h := New()
	if !strings.HasPrefix(tok, Prefix) || strings.Contains(h.Hash, tok) {
		t.Fatalf("token %q hash %+v", tok, h)
	}
	id, secret, err := Split(tok)
	if err != nil || id != h.ID {
		t.Fatalf("split %q: %v %v", tok, id, err)
	}
	if !Matches(h, secret) {
		t.Fatal("own secret does not match")
	}
	// One changed character anywhere in the secret fails.
	for i := range secret {
		b := []byte(secret)
		b[i] ^= 1
		if Matches(h, string(b)) {
			t.Fatalf("changed byte %d matched", i)
		}
	}
	tok2, h2 := New()
	if tok2 == tok || h2.Salt == h.Salt {
		t.Fatal("tokens repeat")
	}
	_, s2, _ := Split(tok2)
	if Matches(h, s2) {
		t.Fatal("another token matched")
	}
	for _, bad := range []string{"", "sk-abc", Prefix, Prefix + "x_y", tok + "x", strings.Replace(tok, "_", "", 2)} {
		if _, _, err := Split(bad); err == nil {
			t.Errorf("Split(%q) accepted", bad)
		}
	}
}

func FuzzSplit(f *testing.F) {
	tok, _ := New()
	f.Add(tok)
	f.Add("fgw__")
	f.Fuzz(func(t *testing.T, s string) {
		id, secret, err := Split(s)
		if err == nil && Prefix+id+"_"+secret != s {
			t.Fatalf("Split(%q) = %q %q", s, id, secret)
		}
	})
}
