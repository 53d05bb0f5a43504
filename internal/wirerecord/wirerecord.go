// Package wirerecord keeps what a local API stand-in received and refused:
// every request body in arrival order and the message of every refusal. The
// stand-ins of the Anthropic and OpenAI APIs (anthropictest, openaitest)
// embed a Recorder so that tests read both the same way.
package wirerecord

import (
	"slices"
	"sync"
)

// Recorder is the record of one stand-in. The zero value is ready to use;
// its methods are safe for concurrent use.
type Recorder struct {
	mu         sync.Mutex
	bodies     [][]byte
	rejections []string
}

// Record keeps a request body and returns its number, counting from 1.
func (r *Recorder) Record(body []byte) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, body)
	return len(r.bodies)
}

// Reject keeps the message of a refusal.
func (r *Recorder) Reject(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejections = append(r.rejections, msg)
}

// Requests returns the bodies of every request received, valid or not, in
// arrival order.
func (r *Recorder) Requests() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bodies)
}

// Rejections returns the messages of every refusal, in order.
func (r *Recorder) Rejections() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.rejections)
}
