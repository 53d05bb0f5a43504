//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cluster

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"syscall"
)

// errStrayData is a connection that has bytes to read while idle: the
// replies it holds belong to no command.
var errStrayData = errors.New("cluster: an idle Redis connection holds unread data")

// connGone reports why nc, idle in the pool, cannot be used again: the
// server closed it (a restart, its idle timeout), or it holds data no
// command asked for. It peeks at the socket without blocking or reading.
// Under TLS only a close counts: the TLS layer may hold a record of its
// own (a session ticket) that is no reply.
func connGone(nc net.Conn) error {
	tc, isTLS := nc.(*tls.Conn)
	if isTLS {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var gone error
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case n == 0 && err == nil:
			gone = io.EOF
		case n > 0:
			if !isTLS {
				gone = errStrayData
			}
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK):
			// nothing to read: alive
		default:
			gone = err
		}
		return true // never wait
	})
	if err != nil {
		return err
	}
	return gone
}
