package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/gateway/config"
)

const hintsHelp = "hints `file` (JSON Lines of id, hints and digest, as toolsearch enrich writes) applied to the catalog before it is indexed"

// hintsFileName is the hints file in the state directory, where enrich
// writes by default and serve reads.
const hintsFileName = "hints.jsonl"

// defaultHintsPath is the state directory's hints file, "" when there is
// no state directory.
func defaultHintsPath() string {
	dir := config.DefaultStateDir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, hintsFileName)
}

// loadCatalog reads the catalog (loadSnapshot) and applies the hints file
// at hintsPath, if any, saying on stderr what the hints did. A hints file
// that cannot be read is an error; entries for tools the catalog does not
// have, or written for an older definition, are not.
func loadCatalog(cmd, catPath, hintsPath string, stderr io.Writer) (*catalog.Snapshot, hints.Report, error) {
	snap, err := loadSnapshot(catPath)
	if err != nil || hintsPath == "" {
		return snap, hints.Report{}, err
	}
	set, err := hints.LoadFile(hintsPath)
	if err != nil {
		return nil, hints.Report{}, err
	}
	snap, rep, err := set.Apply(snap)
	if err != nil {
		return nil, rep, err
	}
	fmt.Fprintf(stderr, "toolsearch %s: hints %s: %s\n", cmd, hintsPath, rep)
	return snap, rep, nil
}
