package markdown

import (
	"fmt"
	"strings"
	"testing"
)

// benchPage builds a realistic page of about size bytes: a site header with
// navigation, an article of repeated sections (headings, prose with inline links and
// emphasis, lists, a small table, code), with sidebars, ad slots, scripts and share
// bars interleaved the way CMS templates emit them.
func benchPage(size int) string {
	var b strings.Builder
	b.Grow(size + 4096)
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>The harbour at dawn — Ferry Times</title>
<link rel="stylesheet" href="/site.css"><style>body{margin:0;font-family:serif}.ad-slot{min-height:250px}</style>
<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}</script></head><body>
<div id="cookie-banner" class="cookie-consent"><p>We use cookies to improve your experience. <a href="/privacy">Learn more</a></p><button>Accept</button></div>
<header class="site-header"><a class="logo" href="/">Ferry Times</a><nav class="main-nav"><ul><li><a href="/">Home</a></li><li><a href="/world">World</a></li><li><a href="/business">Business</a></li><li><a href="/sport">Sport</a></li></ul></nav></header>
<div class="page"><div class="content-area"><article class="post"><h1>The harbour at dawn</h1><p class="byline">By A. Writer · 12 March</p>`)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `
<h2 id="s%d">Section %d: crossing the strait</h2>
<p>The ferry left the harbour at <strong>six o'clock</strong>, carrying %d passengers, a dozen cars and a <a href="/cargo/%d">cargo of apples</a> bound for the islands, where the market opens early and the fishermen, who had been waiting since four, sell their catch at the quay.</p>
<p>Weather reports said the wind would rise by noon; the captain, however, kept to the timetable, as she has done for <em>twenty-three years</em>, and the crossing took forty minutes.</p>
<div class="share-bar social"><a href="https://twitter.com/share">Share</a><a href="https://facebook.com/share">Post</a></div>
<ul><li>Departures every hour from the north quay</li><li>Tickets at the kiosk or <a href="/tickets">online</a></li><li>Bicycles travel free</li></ul>
<table><thead><tr><th>Port</th><th>Departs</th><th>Arrives</th></tr></thead><tbody><tr><td>North quay</td><td>07:10</td><td>07:50</td></tr><tr><td>Island pier</td><td>08:05</td><td>08:45</td></tr></tbody></table>
<div class="ad-slot" id="ad-%d"><script>googletag.cmd.push(function(){googletag.display("ad-%d")})</script><span>Advertisement</span></div>
<pre><code>schedule --from north --to island --at 07:10</code></pre>
<aside class="related"><h3>Related</h3><ul><li><a href="/a%d">Storm closes the pier</a></li><li><a href="/b%d">New ferry ordered</a></li></ul></aside>`, i, i, 100+i, i, i, i, i, i)
	}
	b.WriteString(`</article></div><aside class="sidebar"><h3>Most read</h3><ol><li><a href="/1">One</a></li><li><a href="/2">Two</a></li></ol></aside></div>
<footer class="site-footer"><p>© Ferry Times</p><ul><li><a href="/about">About</a></li><li><a href="/contact">Contact</a></li></ul></footer></body></html>`)
	return b.String()
}

func BenchmarkExtract(b *testing.B) {
	page := benchPage(2 << 20)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		Extract(page, nil)
	}
}

func TestBenchPageExtracts(t *testing.T) {
	doc := Extract(benchPage(8<<10), nil)
	if doc.Title != "The harbour at dawn — Ferry Times" || doc.Whole {
		t.Errorf("title %q, whole %v", doc.Title, doc.Whole)
	}
	for _, noise := range []string{"cookies", "Home", "Share", "Most read", "Related", "©", "googletag"} {
		if strings.Contains(doc.Markdown, noise) {
			t.Errorf("noise %q kept", noise)
		}
	}
	for _, want := range []string{"## Section 0: crossing the strait", "- Bicycles travel free", "| Port | Departs | Arrives |", "```\nschedule"} {
		if !strings.Contains(doc.Markdown, want) {
			t.Errorf("missing %q", want)
		}
	}
	if t.Failed() {
		t.Log(doc.Markdown)
	}
}
