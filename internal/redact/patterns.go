package redact

import "regexp"

// A shape is a kind of secret recognised by its form rather than by its
// value: a provider's key format, a bearer token, a password in a URL, the
// value after a key named like a secret. It catches secrets the
// configuration never named, such as a key passed as a server argument or
// a token a server prints on stderr.
//
// keep, when set, is the part of the match that stays: a prefix such as
// "Bearer " or "password=" that tells the reader what was hidden.
type shape struct {
	name string
	re   *regexp.Regexp
}

// shapes are the secret forms every Redactor made by New hides, besides
// its values. They are kept specific (a vendor's prefix and a long enough
// tail, or a secret-like key name), so that ordinary text is left alone.
// Each pattern's "keep" group, when it has one, stays in the text.
var shapes = []shape{
	// Anthropic, OpenAI (sk-, sk-proj-, sk-svcacct-) and other sk- keys.
	{"sk key", regexp.MustCompile(`\bsk-[A-Za-z0-9][A-Za-z0-9_-]{19,}`)},
	// Stripe-style live and test keys.
	{"stripe key", regexp.MustCompile(`\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}`)},
	// GitHub tokens: classic (ghp_, gho_, ghu_, ghs_, ghr_) and fine-grained.
	{"github token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`)},
	// GitLab personal access tokens.
	{"gitlab token", regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`)},
	// Slack tokens.
	{"slack token", regexp.MustCompile(`\bxox[abpors]-[A-Za-z0-9-]{10,}`)},
	// AWS access key ids.
	{"aws key id", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	// Google API keys.
	{"google key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35,}`)},
	// JSON web tokens: three base64url parts, the first a JSON header.
	{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
	// An Authorization header or field, with or without a scheme.
	{"authorization", regexp.MustCompile(`(?i)(?P<keep>\bauthorization["']?\s*[:=]\s*["']?(?:bearer\s+|basic\s+|token\s+)?)[^\s"',;&\[]{8,}`)},
	// A bearer token anywhere else: "Bearer " and 16 or more token characters.
	{"bearer token", regexp.MustCompile(`(?i)(?P<keep>\bbearer\s+)[A-Za-z0-9._~+/=-]{16,}`)},
	// A password in a URL: scheme://user:password@host.
	{"url password", regexp.MustCompile(`(?P<keep>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+@`)},
	// The value after a key named like a secret, with = or : between:
	// api_key=…, "password": "…", X-Api-Key: …, client_secret=…. A value
	// that is a placeholder or a reference ($VAR, ${VAR}, <token>) stays.
	{"secret key value", regexp.MustCompile(`(?i)(?P<keep>\b(?:x-)?(?:api[_-]?key|access[_-]?key|secret[_-]?key|client[_-]?secret|secret|password|passwd|auth[_-]?token|access[_-]?token|refresh[_-]?token|token)["']?\s*[:=]\s*["']?)[^\s"',;&\[<>${][^\s"',;&\[<>]{5,}`)},
	// The same keys as command-line flags: --token VALUE, -password VALUE.
	{"secret flag", regexp.MustCompile(`(?i)(?P<keep>(?:^|\s)--?(?:api[_-]?key|secret|password|auth[_-]?token|access[_-]?token|token)\s+)[^\s"'\[-][^\s"'\[]{5,}`)},
}

// redactShapes replaces every recognised secret shape in s.
func redactShapes(s string) string {
	for _, sh := range shapes {
		if sh.re.SubexpIndex("keep") >= 0 {
			s = sh.re.ReplaceAllString(s, "${keep}"+Mark)
		} else {
			s = sh.re.ReplaceAllLiteralString(s, Mark)
		}
	}
	return s
}
