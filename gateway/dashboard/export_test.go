package dashboard

// OpenStreams is the number of event streams being served, for the
// browser test: a page the browser left must not hold one.
func (d *Dashboard) OpenStreams() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.streams
}
