package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
)

// Methods of the extension's own pages beyond settings: the side panels' presence
// (ui.presence) and the options page's view of the workspace (workspace.*).

func (h *Host) registerUIMethods() error {
	for name, fn := range map[string]MethodFunc{
		"ui.presence":      h.uiPresence,
		"workspace.list":   h.workspaceList,
		"workspace.read":   h.workspaceRead,
		"workspace.delete": h.workspaceDelete,
		"workspace.usage":  h.workspaceUsage,
	} {
		if err := h.Methods.Register(name, fn); err != nil {
			return err
		}
	}
	return nil
}

// panelCount is how many side panels the extension connected now last said were
// open. Until it says, the count is unknown and its UI is asked as before.
type panelCount struct {
	mu    sync.Mutex
	n     int
	known bool
}

func (c *panelCount) set(n int) {
	c.mu.Lock()
	c.n, c.known = n, true
	c.mu.Unlock()
}

// PanelsOpen makes connUI a tools.Presence: the registry denies confirmations and
// hides ask_user at once when the extension says no side panel is open, instead of
// a round trip that can only fail.
func (u connUI) PanelsOpen() (int, bool) {
	if u.panels == nil {
		return 0, false
	}
	u.panels.mu.Lock()
	defer u.panels.mu.Unlock()
	return u.panels.n, u.panels.known
}

// uiPresence is the notification ui.presence {panels: n}, sent by the extension
// whenever the number of open side panels changes and on every (re)connect.
func (h *Host) uiPresence(ctx context.Context, raw json.RawMessage) (any, error) {
	var p struct {
		Panels *int `json:"panels"`
	}
	if err := protocol.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.Panels == nil || *p.Panels < 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: ui.presence needs panels, the number of open side panels (0 or more)")
	}
	h.connMu.Lock()
	panels := h.panels
	h.connMu.Unlock()
	if panels == nil {
		return nil, nil // not served over a connection (a direct call): nothing to track
	}
	panels.set(*p.Panels)
	h.Log.Debug().Int("panels", *p.Panels).Msg("side panels")
	return map[string]int{"panels": *p.Panels}, nil
}

// MaxWorkspaceRead is the largest file workspace.read returns: the options page shows
// or downloads it in one message, and a data URL is a third larger than the file.
const MaxWorkspaceRead = 16 << 20

type workspacePathParams struct {
	Path string `json:"path"`
}

// workspaceError turns storage's workspace errors into protocol errors whose message
// says what was wrong and whose data.reason names it for the page.
func workspaceError(err error) error {
	reasons := []struct {
		err    error
		reason string
	}{
		{storage.ErrFileNotFound, "not_found"}, {storage.ErrIsFolder, "is_folder"}, {storage.ErrNotFolder, "not_folder"},
		{storage.ErrPathIsRoot, "is_root"}, {storage.ErrPathEscapes, "bad_path"}, {storage.ErrPathNUL, "bad_path"},
		{storage.ErrPathControl, "bad_path"}, {storage.ErrPathBackslash, "bad_path"}, {storage.ErrPathNotUTF8, "bad_path"},
		{storage.ErrPathTooLong, "bad_path"}, {storage.ErrSegmentTooLong, "bad_path"}, {storage.ErrPathEmptySegment, "bad_path"},
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return &protocol.Error{Code: protocol.CodeInvalidParams, Message: err.Error(), Data: map[string]string{"reason": r.reason}}
		}
	}
	return err
}

type workspaceEntry struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Type     string `json:"type"` // "file" or "dir"
	Size     int64  `json:"size"`
	Modified string `json:"modified"` // RFC 3339, UTC
}

func (h *Host) workspaceList(ctx context.Context, raw json.RawMessage) (any, error) {
	var p workspacePathParams
	if err := protocol.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	// The same normalisation as opfs_list: "", "/" and "." are the root.
	dir, err := storage.CleanPath(p.Path)
	if err != nil {
		return nil, workspaceError(fmt.Errorf("workspace path %q: %w", p.Path, err))
	}
	es, err := h.DB.List(ctx, dir)
	if err != nil {
		return nil, workspaceError(err)
	}
	out := make([]workspaceEntry, 0, len(es))
	prefix := strings.TrimSuffix(dir, "/") + "/"
	for _, e := range es {
		out = append(out, workspaceEntry{Name: e.Name, Path: prefix + e.Name, Type: e.Type, Size: e.Size,
			Modified: e.Modified.UTC().Format(time.RFC3339)})
	}
	return map[string]any{"path": dir, "entries": out}, nil
}

func (h *Host) workspaceRead(ctx context.Context, raw json.RawMessage) (any, error) {
	var p workspacePathParams
	if err := protocol.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	fi, err := h.DB.Stat(ctx, p.Path)
	if err != nil {
		return nil, workspaceError(err)
	}
	if fi.Size > MaxWorkspaceRead {
		return nil, &protocol.Error{Code: protocol.CodeInvalidParams,
			Message: fmt.Sprintf("%s is %d bytes, more than the %d the options page can open; read it with `ferry call opfs_read`", fi.Path, fi.Size, MaxWorkspaceRead),
			Data:    map[string]string{"reason": "too_large"}}
	}
	f, err := h.DB.ReadFile(ctx, p.Path)
	if err != nil {
		return nil, workspaceError(err)
	}
	out := map[string]any{"path": f.Path, "mime": f.MIME, "size": f.Size, "is_text": f.IsText,
		"version": f.Version, "modified": f.ModifiedAt.UTC().Format(time.RFC3339)}
	if f.IsText {
		out["text"] = string(f.Content)
	} else {
		out["data_url"] = "data:" + strings.ReplaceAll(f.MIME, " ", "") + ";base64," + base64.StdEncoding.EncodeToString(f.Content)
	}
	return out, nil
}

func (h *Host) workspaceDelete(ctx context.Context, raw json.RawMessage) (any, error) {
	var p workspacePathParams
	if err := protocol.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	removed, err := h.DB.Delete(ctx, p.Path)
	if err != nil {
		return nil, workspaceError(err)
	}
	cp, _ := storage.CleanPath(p.Path)
	paths := make([]string, 0, len(removed))
	var bytes int64
	for _, r := range removed {
		paths = append(paths, r.Path)
		bytes += r.Size
	}
	h.Log.Info().Str("path", cp).Int("files", len(removed)).Msg("workspace delete from the options page")
	return map[string]any{"path": cp, "removed": paths, "files": len(removed), "bytes": bytes}, nil
}

func (h *Host) workspaceUsage(ctx context.Context, raw json.RawMessage) (any, error) {
	if err := protocol.DecodeParams(raw, &struct{}{}); err != nil {
		return nil, err
	}
	used, err := h.DB.WorkspaceUsage(ctx)
	if err != nil {
		return nil, err
	}
	quota := storage.DefaultWorkspaceQuota
	if v, ok, err := h.DB.GetSetting(ctx, storage.SettingWorkspaceQuota); err != nil {
		return nil, err
	} else if ok {
		if n, perr := strconv.ParseInt(v, 10, 64); perr == nil && n > 0 {
			quota = n
		}
	}
	return map[string]int64{"bytes": used, "quota": quota}, nil
}
