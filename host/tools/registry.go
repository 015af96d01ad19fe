package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// Auditor receives one entry per call (storage.AuditLog satisfies it). Record must
// not block for long: the pipeline calls it before returning the result.
type Auditor interface {
	Record(storage.AuditEntry)
}

// Options configures a Registry.
type Options struct {
	Settings config.Settings // nil: every setting at its default
	Audit    Auditor         // nil: calls are not recorded
	Log      zerolog.Logger
	Now      func() time.Time // nil: time.Now
}

// Registry holds every tool and runs every call. It is safe for concurrent use.
type Registry struct {
	mu sync.RWMutex
	// global holds builtins and capabilities by registered name; byModel maps the
	// model-visible names of those back. Page actions live per tab.
	global  map[string]*entry
	byModel map[string]string
	folded  map[string]string         // FoldName of each global name → the name
	pages   map[int]map[string]*entry // tab → name → page action

	ui     atomic.Pointer[uiHolder]
	policy *policyCache
	guard  *guard
	audit  Auditor
	log    zerolog.Logger
	now    func() time.Time
}

type uiHolder struct{ ui UI }

type entry struct {
	tool      Tool
	name      string // as registered ("app:name" for capabilities)
	modelName string
	schema    *Schema
	tokens    int
}

// NewRegistry makes an empty registry.
func NewRegistry(opts Options) *Registry {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Registry{
		global:  map[string]*entry{},
		byModel: map[string]string{},
		folded:  map[string]string{},
		pages:   map[int]map[string]*entry{},
		policy:  &policyCache{src: opts.Settings},
		guard:   newGuard(),
		audit:   opts.Audit,
		log:     opts.Log,
		now:     opts.Now,
	}
}

// SetUI connects (or, with nil, disconnects) the surface that answers confirmations
// and ask_user.
func (r *Registry) SetUI(ui UI) {
	if ui == nil {
		r.ui.Store(nil)
		return
	}
	r.ui.Store(&uiHolder{ui})
}

// UI is the connected UI, or nil.
func (r *Registry) UI() UI {
	if h := r.ui.Load(); h != nil {
		return h.ui
	}
	return nil
}

// RefreshSettings makes the next call read the settings again (after a change made
// through this process).
func (r *Registry) RefreshSettings() {
	if l, ok := r.policy.src.(interface{ Refresh() }); ok {
		l.Refresh()
	}
}

// Register adds a tool, or replaces the one registered under the same name (and,
// for a page action, the same tab). The parameters are normalised and compiled now;
// a tool that cannot be served exactly as declared is refused with the reason.
func (r *Registry) Register(t Tool) error {
	e, err := r.prepare(t)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.tool.Source == SourcePage {
		if g, ok := r.global[e.name]; ok {
			return fmt.Errorf("page action %q is refused: the name belongs to the %s tool %q, which a page can never shadow; rename the action", e.name, g.tool.Source, g.name)
		}
		if g, ok := r.byModel[e.name]; ok {
			return fmt.Errorf("page action %q is refused: the model knows the %s tool %q by that name, which a page can never shadow; rename the action", e.name, r.global[g].tool.Source, g)
		}
		if g, ok := r.byModel[e.modelName]; ok {
			return fmt.Errorf("page action %q is refused: the model would see it as %q, the name of the %s tool %q; rename the action", e.name, e.modelName, r.global[g].tool.Source, g)
		}
		if g, ok := r.folded[FoldName(e.name)]; ok {
			return fmt.Errorf("page action %q is refused: it reads like the %s tool %q (case, '-', '_', '.' and spaces aside), which a page can never imitate; rename the action", e.name, r.global[g].tool.Source, g)
		}
		tab := r.pages[t.TabID]
		if tab == nil {
			tab = map[string]*entry{}
			r.pages[t.TabID] = tab
		}
		for _, other := range tab {
			if other.name != e.name && other.modelName == e.modelName {
				return fmt.Errorf("page action %q is refused: the model would see it as %q, like the action %q of the same tab; rename one", e.name, e.modelName, other.name)
			}
		}
		tab[e.name] = e
		return nil
	}
	if owner, ok := r.byModel[e.modelName]; ok && owner != e.name {
		return fmt.Errorf("tool %q is refused: the model would see it as %q, like the tool %q; rename one", e.name, e.modelName, owner)
	}
	if old, ok := r.global[e.name]; ok && old.tool.Source != e.tool.Source {
		return fmt.Errorf("tool %q is refused: a %s tool already has the name, and only a tool of the same source may replace it", e.name, old.tool.Source)
	}
	r.global[e.name] = e
	r.byModel[e.modelName] = e.name
	r.folded[FoldName(e.name)] = e.name
	// A new global name hides nothing: any page action already using it stops
	// being callable by that name, so it is removed rather than left shadowed.
	for _, tab := range r.pages {
		delete(tab, e.name)
	}
	return nil
}

func (r *Registry) prepare(t Tool) (*entry, error) {
	if t.Source == "" {
		t.Source = SourceBuiltin
	}
	if t.Kind == "" {
		t.Kind = KindRead
	}
	name := t.Name
	switch t.Source {
	case SourceBuiltin:
		if !ValidModelName(t.Name) {
			return nil, fmt.Errorf("builtin tool %q: a builtin's name must match ^[a-zA-Z0-9_-]{1,64}$", t.Name)
		}
	case SourceCapability:
		if t.App == "" || !ValidModelName(t.App) {
			return nil, fmt.Errorf("capability %q: App must name the app, matching ^[a-zA-Z0-9_-]{1,64}$", t.Name)
		}
		if len(name) <= len(t.App) || name[:len(t.App)+1] != t.App+":" {
			name = t.App + ":" + name
		}
	case SourcePage:
		if t.Origin == "" {
			return nil, fmt.Errorf("page action %q: the page's origin is required", t.Name)
		}
	default:
		return nil, fmt.Errorf("tool %q: unknown source %q (builtin, page or capability)", t.Name, t.Source)
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	if t.Kind != KindRead && t.Kind != KindWrite {
		return nil, fmt.Errorf("tool %q: kind must be read or write, not %q", name, t.Kind)
	}
	if t.Run == nil {
		return nil, fmt.Errorf("tool %q has no Run function", name)
	}
	for _, p := range t.Permissions {
		if p != PermReadStore && p != PermWriteStore && p != PermEmitEvents {
			return nil, fmt.Errorf("tool %q: unknown permission %q (readStore, writeStore or emitEvents)", name, p)
		}
	}
	schema := t.Schema
	if schema == nil {
		var err error
		if schema, err = normalizeParameters(t.Parameters, t.Source == SourceBuiltin); err != nil {
			return nil, fmt.Errorf("tool %q: %w", name, err)
		}
	}
	if t.Description == "" {
		t.Description = "Execute: " + name
	}
	t.Name = name
	e := &entry{tool: t, name: name, modelName: ModelName(name), schema: schema}
	e.tokens = EstimateTokens(OpenAIDefinition(e.modelName, t.Description, schema.JSON))
	return e, nil
}

// OpenAIDefinition is one tool's definition as an OpenAI request carries it in its
// tools array, the form the token figures are given for:
// {"type":"function","function":{"name","description","parameters"}}.
func OpenAIDefinition(modelName, description string, parameters json.RawMessage) []byte {
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	def, _ := marshalNoEscape(struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}{"function", function{modelName, description, parameters}})
	return def
}

// EstimateTokens is the token estimate of a tool definition (OpenAIDefinition):
// what ferry tools, tools.list and the diagnostics view show. It is calibrated on
// the builtins' definitions against o200k_base, the tokenizer of OpenAI's current
// models, where JSON Schema and English prose run 4.25 bytes a token; a character
// outside ASCII counts 0.8 (CJK text runs 0.7 to 0.95 a character, far fewer than its
// three UTF-8 bytes would make). TestToolListBudget (cmd/ferry) holds the builtins'
// total within 3% of the real count.
func EstimateTokens(definition []byte) int {
	ascii, other := 0, 0
	for _, r := range string(definition) {
		if r < utf8.RuneSelf {
			ascii++
		} else {
			other++
		}
	}
	return (ascii*20 + other*68 + 84) / 85 // ascii/4.25 + other*0.8, rounded up
}

// Unregister removes a builtin or capability by its registered name.
func (r *Registry) Unregister(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.global[name]
	if ok {
		delete(r.global, name)
		delete(r.byModel, e.modelName)
		delete(r.folded, FoldName(name))
	}
	return ok
}

// RemoveApp removes every capability of an app and says how many.
func (r *Registry) RemoveApp(app string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for name, e := range r.global {
		if e.tool.Source == SourceCapability && e.tool.App == app {
			delete(r.global, name)
			delete(r.byModel, e.modelName)
			delete(r.folded, FoldName(name))
			n++
		}
	}
	return n
}

// RemoveTab removes every page action of a tab (closed, or navigated away).
func (r *Registry) RemoveTab(tab int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.pages[tab])
	delete(r.pages, tab)
	return n
}

// RemoveFrame removes the page actions one frame of a tab declared.
func (r *Registry) RemoveFrame(tab, frame int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for name, e := range r.pages[tab] {
		if e.tool.FrameID == frame {
			delete(r.pages[tab], name)
			n++
		}
	}
	if len(r.pages[tab]) == 0 {
		delete(r.pages, tab)
	}
	return n
}

// lookup finds a tool by registered or model-visible name: builtins and
// capabilities first, then the page actions of the tab.
func (r *Registry) lookup(name string, tab int) *entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if e, ok := r.global[name]; ok {
		return e
	}
	if n, ok := r.byModel[name]; ok {
		return r.global[n]
	}
	if e, ok := r.pages[tab][name]; ok {
		return e
	}
	for _, e := range r.pages[tab] {
		if e.modelName == name {
			return e
		}
	}
	return nil
}

// Resolve maps a model-visible (or registered) name back to the registered name.
func (r *Registry) Resolve(name string, tab int) (string, bool) {
	if e := r.lookup(name, tab); e != nil {
		return e.name, true
	}
	return "", false
}

// Listing is one tool as tools.list, `ferry tools` and the model see it.
type Listing struct {
	Name        string          `json:"name"`
	ModelName   string          `json:"model_name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Source      Source          `json:"source"`
	Kind        Kind            `json:"kind"`
	Dialect     Dialect         `json:"dialect"`
	Tokens      int             `json:"tokens"`
	Confirm     bool            `json:"confirm,omitempty"` // asks a person before every run, or before the runs Assess picks
	Dangerous   bool            `json:"dangerous,omitempty"`
	Permissions []string        `json:"permissions,omitempty"`
	Origin      string          `json:"origin,omitempty"`
	App         string          `json:"app,omitempty"`
	TabID       int             `json:"tab_id,omitempty"`
	FrameID     int             `json:"frame_id,omitempty"`
	// Class is the tool's place in the data-flow rule, as it declared it.
	Class Class `json:"-"`
}

// Unavailable is a tool whose precondition fails now, with the reason.
type Unavailable struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// PageView is what the model is told about a bound tab beyond the tools it is
// offered: the page-actions work fills it, the agent writes it into the prompt.
type PageView struct {
	URL         string        `json:"url,omitempty"`
	Title       string        `json:"title,omitempty"`
	Actions     []string      `json:"actions,omitempty"`     // the page's available actions
	Unavailable []Unavailable `json:"unavailable,omitempty"` // and those that are not, with reasons
	Records     []string      `json:"records,omitempty"`     // what the page recorded for the agent
}

func (e *entry) listing() Listing {
	t := e.tool
	return Listing{
		Name: e.name, ModelName: e.modelName, Title: t.Title, Description: t.Description, Parameters: e.schema.JSON,
		Source: t.Source, Kind: t.Kind, Dialect: e.schema.Dialect, Tokens: e.tokens,
		Confirm: t.Confirm || t.Assess != nil, Dangerous: t.Dangerous, Permissions: t.Permissions,
		Origin: t.Origin, App: t.App, TabID: t.TabID, FrameID: t.FrameID, Class: t.Class,
	}
}

func (r *Registry) entries(tab int) []*entry {
	r.mu.RLock()
	out := make([]*entry, 0, len(r.global)+len(r.pages[tab]))
	for _, e := range r.global {
		if len(e.tool.Callers) == 0 {
			out = append(out, e)
		}
	}
	for _, e := range r.pages[tab] {
		out = append(out, e)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].modelName < out[j].modelName })
	return out
}

// All lists every builtin and capability, and the page actions of tab, sorted by
// model-visible name, whether or not they are available now.
func (r *Registry) All(tab int) []Listing {
	es := r.entries(tab)
	out := make([]Listing, len(es))
	for i, e := range es {
		out[i] = e.listing()
	}
	return out
}

// List splits the tools for a tab into those the model may be offered now and those
// whose precondition fails (with the reason), both sorted. Tools the policy
// disables are left out of both.
func (r *Registry) List(ctx context.Context, tab int) (available []Listing, unavailable []Unavailable) {
	p := r.policy.get(ctx)
	available, unavailable = []Listing{}, []Unavailable{}
	for _, e := range r.entries(tab) {
		if p.Disabled[e.name] || p.Disabled[e.modelName] {
			continue
		}
		if ok, reason := r.available(ctx, e, &Call{Tool: e.name, TabID: tab}); !ok {
			unavailable = append(unavailable, Unavailable{e.modelName, reason})
			continue
		}
		available = append(available, e.listing())
	}
	return available, unavailable
}

// ModelList is List as the model sees it: without the tools whose Exposed says no
// (page actions outside the active region), available or not.
func (r *Registry) ModelList(ctx context.Context, tab int) (available []Listing, unavailable []Unavailable) {
	hidden := map[string]bool{}
	for _, e := range r.entries(tab) {
		if e.tool.Exposed != nil && !exposed(e) {
			hidden[e.modelName] = true
		}
	}
	available, unavailable = r.List(ctx, tab)
	if len(hidden) == 0 {
		return available, unavailable
	}
	a, u := available[:0:0], unavailable[:0:0]
	for _, l := range available {
		if !hidden[l.ModelName] {
			a = append(a, l)
		}
	}
	for _, x := range unavailable {
		if !hidden[x.Name] {
			u = append(u, x)
		}
	}
	return a, u
}

// exposed runs Tool.Exposed, a panic counting as exposed (the model is told too
// much rather than too little).
func exposed(e *entry) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = true
		}
	}()
	return e.tool.Exposed()
}

// available runs a precondition, a panic counting as unavailable.
func (r *Registry) available(ctx context.Context, e *entry, call *Call) (ok bool, reason string) {
	if e.tool.Available == nil {
		return true, ""
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.Error().Str("tool", e.name).Interface("panic", p).Msg("availability check panicked")
			ok, reason = false, fmt.Sprintf("the availability check of %s failed: %v", e.name, p)
		}
	}()
	ok, reason = e.tool.Available(ctx, call)
	if !ok && reason == "" {
		reason = e.name + " is not available now"
	}
	return ok, reason
}

// TotalTokens is the estimate for offering every listed tool in one request.
func TotalTokens(ls []Listing) int {
	n := 0
	for _, l := range ls {
		n += l.Tokens
	}
	return n
}
