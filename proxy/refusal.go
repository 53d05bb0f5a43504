package proxy

import (
	"net/http"

	"github.com/toolsearch/toolsearch/adapters/messages"
)

// How the proxy reads a refusal: package messages reads an upstream's
// error against the request the proxy sent (messages.RefusalTo: the roles,
// block and tool types, fields and betas it used, named in the error's
// text however worded), the same reading the anthropic library does. A
// name a lower level drops makes the 400 a refusal of that feature; a name
// no level drops (max_tokens, a text block) makes it the client's to read;
// a 400 that names nothing the request used is retried one level lower,
// where a lower level changes the request.

// drop is the level that stops sending a feature: the proxy can send the
// request without it by going down to that level.
type drop uint8

const (
	// keep: no level drops the feature (the refusal is the client's).
	keep drop = iota
	// dropInline: inline definitions named by reference (level.noInline).
	dropInline
	// dropFold: system messages folded, tool changes applied (level.fold).
	dropFold
	// dropEmulate: tool search emulated (level.emulate).
	dropEmulate
)

// strategy is the richest strategy of package messages that does without
// what d drops; dropOf is its inverse.
func (d drop) strategy() messages.Strategy {
	switch d {
	case dropInline:
		return messages.ReferenceAdd
	case dropFold:
		return messages.Classic
	case dropEmulate:
		return messages.Plain
	}
	return messages.StrategyAuto
}

// rank orders a level by what it drops: as sent 0, then dropInline,
// dropFold, dropEmulate.
func (l level) rank() drop {
	switch {
	case l.emulate:
		return dropEmulate
	case l.fold:
		return dropFold
	case l.noInline:
		return dropInline
	}
	return keep
}

// with is the level l lowered to drop d as well.
func (l level) with(d drop) level {
	switch d {
	case dropInline:
		l.noInline = true
	case dropFold:
		l.fold = true
	case dropEmulate:
		l.emulate = true
	}
	return l
}

// dropOf is the level that stops sending what strategy s does without.
func dropOf(s messages.Strategy) drop {
	switch s {
	case messages.ReferenceAdd:
		return dropInline
	case messages.Classic:
		return dropFold
	case messages.Plain:
		return dropEmulate
	}
	return keep
}

// refusal is an upstream's error read against the request it answered.
type refusal struct {
	messages.Reading
}

// drop is the level that stops sending the feature the error names; keep
// when it names none a level drops.
func (r refusal) drop() drop { return dropOf(r.Below) }

// below is the richest level under l that changes what the request sends,
// and false when none does.
func (r refusal) below(l level) (level, bool) {
	for d := l.rank() + 1; d <= dropEmulate; d++ {
		if r.Changes(d.strategy()) {
			return l.with(d), true
		}
	}
	return l, false
}

// refusalStatus reports whether a status is one a refusal comes with:
// 400, and 422 (the status of several Python routers' validation errors).
func refusalStatus(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusUnprocessableEntity
}

// readRefusal reads an upstream error body against the request it
// answered: sent (the body the proxy sent) and header (its headers, for
// the betas).
func readRefusal(body, sent []byte, header http.Header) refusal {
	return refusal{messages.RefusalTo(body, sent, header.Values("anthropic-beta"))}
}
