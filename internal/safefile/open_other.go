//go:build !unix

package safefile

// NonblockFlag is not needed where named pipes do not block an open.
const NonblockFlag = 0
