package enrich

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StatusError is an HTTP error status from a provider.
type StatusError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// RetryAfter is the wait the provider asked for (Retry-After-Ms or
	// Retry-After), zero when it named none.
	RetryAfter time.Duration
	// Message is the provider's error message, if any.
	Message string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Is makes errors.Is(err, ErrFatal) true for the statuses after which no
// request can succeed: 401, 403 and 404 (no such model or endpoint).
func (e *StatusError) Is(target error) bool {
	if target != ErrFatal {
		return false
	}
	switch e.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return true
	}
	return false
}

// retryable reports whether a status is worth trying again: 408, 409
// (the APIs' "try again"), 429 and every 5xx.
func (e *StatusError) retryable() bool {
	switch {
	case e.StatusCode == http.StatusRequestTimeout, e.StatusCode == http.StatusConflict,
		e.StatusCode == http.StatusTooManyRequests, e.StatusCode >= 500:
		return true
	}
	return false
}

// RetryAfter reads the wait a response asks for: Retry-After-Ms (in
// milliseconds, as the model APIs send it) or Retry-After (seconds, or an
// HTTP date). It returns zero when neither is there or readable.
func RetryAfter(h http.Header) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

// transportError reports whether err is the network failing (a refused
// or reset connection, a timeout, a cut-off answer): worth a retry. Other
// errors (no credentials, an answer that is not the API's JSON) are not.
func transportError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// pacer holds back every request until a time, after a 429.
type pacer struct {
	mu    sync.Mutex
	until time.Time
}

// pause holds requests back for d from now (or longer, if already so).
func (p *pacer) pause(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := time.Now().Add(d); t.After(p.until) {
		p.until = t
	}
}

// wait returns when the pause is over or ctx ends.
func (p *pacer) wait(ctx context.Context) error {
	p.mu.Lock()
	d := time.Until(p.until)
	p.mu.Unlock()
	return sleep(ctx, d)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// send sends a batch's request, retrying what is worth retrying.
func (r *runner) send(ctx context.Context, b Batch) (Reply, error) {
	backoff := r.opts.Backoff
	for attempt := 0; ; attempt++ {
		if err := r.pace.wait(ctx); err != nil {
			return Reply{}, err
		}
		rctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
		r.countRequest()
		reply, err := r.p.Complete(rctx, b.Request)
		cancel()
		if err == nil {
			return reply, nil
		}
		if ctx.Err() != nil {
			return Reply{}, ctx.Err()
		}
		if errors.Is(err, ErrFatal) {
			return Reply{}, fmt.Errorf("%w: %w", ErrFatal, err)
		}
		var se *StatusError
		isStatus := errors.As(err, &se)
		if (isStatus && !se.retryable()) || (!isStatus && !transportError(err)) {
			return Reply{}, err
		}
		if attempt >= r.opts.Retries {
			return Reply{}, fmt.Errorf("%w (gave up after %d tries)", err, attempt+1)
		}
		wait := backoff + rand.N(backoff/4+1) // jitter, so that workers do not retry in step
		backoff = min(2*backoff, maxBackoff)
		why := err.Error()
		if isStatus && se.RetryAfter > 0 {
			if se.RetryAfter > r.opts.MaxRetryWait {
				return Reply{}, fmt.Errorf("%w: the provider asks to wait %v, longer than the %v allowed", err,
					se.RetryAfter.Round(time.Second), r.opts.MaxRetryWait)
			}
			wait, why = se.RetryAfter, fmt.Sprintf("HTTP %d, Retry-After %v", se.StatusCode, se.RetryAfter)
		}
		r.noteWait(wait, why)
		if isStatus && se.StatusCode == http.StatusTooManyRequests {
			r.pace.pause(wait) // every request waits, not only this one
			continue
		}
		if err := sleep(ctx, wait); err != nil {
			return Reply{}, err
		}
	}
}
