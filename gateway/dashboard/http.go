package dashboard

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Pages are the paths of the dashboard's pages, each served the same
// document, which shows the page its path names.
var Pages = []string{"/ui/servers", "/ui/clients", "/ui/searches", "/ui/economy"}

// maxStreams bounds the event streams served at once.
const maxStreams = 32

// keepAlive is how often an idle event stream sends a comment, so that
// proxies keep it open.
const keepAlive = 15 * time.Second

// minGap spaces the updates of one stream: changes closer together are
// sent as one.
const minGap = 100 * time.Millisecond

// contentSecurity runs only the dashboard's own script and style: no
// inline script, no other origin, no frames.
const contentSecurity = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// ServeHTTP serves the pages under /ui, the state at /ui/api/state and the
// event stream at /ui/events. It answers GET and HEAD only.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurity)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "the dashboard answers GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	switch p := r.URL.Path; {
	case p == "/ui" || p == "/ui/":
		http.Redirect(w, r, Pages[0], http.StatusFound)
	case isPage(p):
		d.asset(w, "assets/index.html", "text/html; charset=utf-8")
	case p == "/ui/app.js":
		d.asset(w, "assets/app.js", "text/javascript; charset=utf-8")
	case p == "/ui/style.css":
		d.asset(w, "assets/style.css", "text/css; charset=utf-8")
	case p == "/ui/api/state":
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Type", "application/json")
		b, err := json.Marshal(d.State())
		if err != nil {
			http.Error(w, "encoding the dashboard's state: "+err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(b)
	case p == "/ui/events":
		d.stream(w, r)
	default:
		http.Error(w, "no dashboard page here: the pages are "+strings.Join(Pages, ", "), http.StatusNotFound)
	}
}

func isPage(p string) bool {
	for _, q := range Pages {
		if p == q {
			return true
		}
	}
	return false
}

func (d *Dashboard) asset(w http.ResponseWriter, name, ctype string) {
	b, err := assets.ReadFile(name)
	if err != nil {
		http.Error(w, "the dashboard's "+name+" is missing from this build", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}

// stream serves server-sent events: a "state" event with the state's
// sequence number now and at every change, so that the page fetches the
// state again. It ends with the request, or when the dashboard closes.
func (d *Dashboard) stream(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	if d.streams >= maxStreams {
		d.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		http.Error(w, fmt.Sprintf("too many dashboard event streams open (at most %d)", maxStreams), http.StatusServiceUnavailable)
		return
	}
	d.streams++
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.streams--
		d.mu.Unlock()
	}()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	var sent uint64
	for first := true; ; first = false {
		d.mu.Lock()
		seq, changed := d.seq, d.changed
		d.mu.Unlock()
		if first || seq != sent {
			if _, err := fmt.Fprintf(w, "retry: 2000\nevent: state\ndata: {\"seq\":%d}\n\n", seq); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
			sent = seq
		}
		select {
		case <-changed:
			select { // gather the changes that come close together
			case <-time.After(minGap):
			case <-r.Context().Done():
				return
			case <-d.closed:
				return
			}
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-d.closed:
			return
		}
	}
}
