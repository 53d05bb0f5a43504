// Package demo embeds a small, made-up catalog of MCP servers so that
// toolsearch has something realistic to search on a fresh clone with
// nothing configured.
//
// The catalog (demo.json, in the plain format described in package catalog)
// holds about ten servers of the kinds people commonly connect: a code host,
// team chat, a filesystem, a SQL database, an issue tracker, a calendar, a
// headless browser, a knowledge-graph memory, a payments service and a
// Kubernetes cluster. Every name and description in it was written for this
// package; none describes a real product.
package demo

import (
	_ "embed"
	"fmt"
	"sync"

	"github.com/toolsearch/toolsearch/core/catalog"
)

//go:embed demo.json
var demoJSON []byte

// JSON returns the embedded catalog file. The caller must not modify the
// returned slice.
func JSON() []byte { return demoJSON }

var (
	snapOnce sync.Once
	snap     *catalog.Snapshot
)

// Snapshot parses the embedded catalog (it panics only if the embedded file
// is broken, which a test rules out). The snapshot is parsed once and shared;
// like every snapshot it is immutable.
func Snapshot() *catalog.Snapshot {
	snapOnce.Do(func() {
		s, err := catalog.Parse(demoJSON)
		if err == nil {
			snap, err = catalog.NewSnapshot(s...)
		}
		if err != nil {
			panic(fmt.Sprintf("catalog/demo: embedded demo.json is broken: %v", err))
		}
	})
	return snap
}
