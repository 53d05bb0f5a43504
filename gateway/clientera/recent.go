package clientera

import (
	"slices"
	"sync"
	"time"
)

// Client is one client as /healthz shows it: the protocol version it
// speaks, its era, how it is connected and its exposure.
type Client struct {
	Protocol  string `json:"protocol"`
	Era       string `json:"era"`
	Transport string `json:"transport"` // "session" (stdio or HTTP session) or "http" (2026-07-28 requests)
	Client    string `json:"client,omitempty"`
	Exposure  string `json:"exposure"`
	// LastSeen is when a 2026-07-28 client over HTTP last sent a request.
	LastSeen *time.Time `json:"last_seen,omitempty"`
}

// MaxRecent bounds the list of 2026-07-28 clients Recent keeps.
const MaxRecent = 32

// seen is one 2026-07-28 client over HTTP, as it names itself (the name
// is self-reported: it is shown, never acted on).
type seen struct {
	protocol, client, exposure string
	lastSeen                   time.Time
}

// Recent is the 2026-07-28 clients served over HTTP lately, in the order
// they were first seen, at most MaxRecent of them (the oldest are
// dropped). Its zero value is empty and ready to use.
type Recent struct {
	mu      sync.Mutex
	clients []seen
}

// Saw records a request at now from a client of the given protocol
// version, name and exposure. It reports whether the client was not
// in the list before.
func (r *Recent) Saw(version, client, exposure string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range r.clients {
		if c.protocol == version && c.client == client && c.exposure == exposure {
			r.clients[i].lastSeen = now
			return false
		}
	}
	r.clients = append(r.clients, seen{protocol: version, client: client, exposure: exposure, lastSeen: now})
	if len(r.clients) > MaxRecent {
		r.clients = slices.Delete(r.clients, 0, len(r.clients)-MaxRecent)
	}
	return true
}

// Clients lists the clients kept, in the order first seen, as /healthz
// shows them (transport "http").
func (r *Recent) Clients() []Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Client, 0, len(r.clients))
	for _, c := range r.clients {
		at := c.lastSeen
		out = append(out, Client{Protocol: c.protocol, Era: Era(c.protocol), Transport: "http", Client: c.client, Exposure: c.exposure, LastSeen: &at})
	}
	return out
}
