package model

import (
	"strings"
	"testing"
)

func TestCheckBaseURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://api.openai.com/v1":            "",
		"http://localhost:11434/v1":            "",
		"https://user:sk-live-42@api.test/v1":  "holds credentials",
		"https://sk-live-42@api.test/v1":       "holds credentials",
		"https://api.test/v1?key=sk-live-42":   "query",
		"ftp://api.test/v1":                    "http:// or https://",
		"https://user:sk-live-42@api test/v1":  "http:// or https://",
		"https://api.test/v1#sk-live-42":       "fragment",
		"api.test/v1":                          "http:// or https://",
		"https://:sk-live-42@api.test/v1":      "holds credentials",
		"https://u:sk-live-42@[::1]:8080/v1":   "holds credentials",
		"https://u:sk-live-42%zz@api.test/v1/": "http:// or https://",
	} {
		err := CheckBaseURL(raw)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s refused: %v", raw, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want a refusal saying %q", raw, err, want)
		case err != nil && strings.Contains(err.Error(), "sk-live-42"):
			t.Errorf("%s: the refusal prints the credential: %v", raw, err)
		}
	}
	if err := CheckBaseURL("https://me:sk-live-42@api.test/v1"); !strings.Contains(err.Error(), "--base-url https://api.test/v1 --api-key-stdin") {
		t.Errorf("the refusal does not give the URL to use: %v", err)
	}
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://api.openai.com/v1":            "https://api.openai.com/v1",
		"https://user:sk-live-42@api.test/v1":  "https://***@api.test/v1",
		"https://api.test/v1?key=sk-live-42":   "https://api.test/v1?key=%E2%80%A6",
		"https://u:sk-live-42%zz@api.test/v1/": "https://***@api.test/v1/",
		"https://u:sk@x@api test/v1?k=sk":      "https://***@api test/v1?…",
		"no scheme u:sk-live-42@host":          "***@host",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
