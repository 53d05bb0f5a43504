//go:build !unix

package files

// openNonblock is not needed where named pipes do not block an open.
const openNonblock = 0
