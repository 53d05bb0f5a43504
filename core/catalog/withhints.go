package catalog

import "slices"

// WithHints returns a copy of t whose Hints are hints (copied). Every other
// field is the same; t itself is not changed, so this is how hints reach a
// tool that is already part of a snapshot.
func (t *Tool) WithHints(hints []string) *Tool {
	c := &Tool{
		Server:       t.Server,
		Name:         t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  t.InputSchema,
		OutputSchema: t.OutputSchema,
		Annotations:  t.Annotations,
		Meta:         t.Meta,
		Raw:          t.Raw,
		Keywords:     t.Keywords,
		AlwaysLoad:   t.AlwaysLoad,
		SearchHint:   t.SearchHint,
		Hints:        slices.Clone(hints),
	}
	return c
}

// WithHints returns a copy of s whose tools are copies made by
// Tool.WithHints with hints(tool) (nil leaves a tool without hints). s is
// not changed.
func (s *Server) WithHints(hints func(*Tool) []string) *Server {
	c := *s
	c.Tools = make([]*Tool, len(s.Tools))
	for i, t := range s.Tools {
		c.Tools[i] = t.WithHints(hints(t))
	}
	return &c
}
