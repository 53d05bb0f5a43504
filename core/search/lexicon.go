package search

import "strings"

// The lexicon of tool land: abbreviations that are expanded on both sides of
// the index, and groups of words that name the same action or object, which
// a query term is widened to at a lower weight. Entries are general
// vocabulary of APIs and developer tools, not phrases of particular queries.

// abbreviations maps a lower-cased short form to the words it stands for.
// Expansion happens before stemming, in documents and queries alike.
var abbreviations = map[string][]string{
	"pr":         {"pull", "request"},
	"prs":        {"pull", "request"},
	"mr":         {"merge", "request"},
	"mrs":        {"merge", "request"},
	"k8s":        {"kubernetes"},
	"kube":       {"kubernetes"},
	"repo":       {"repository"},
	"repos":      {"repository"},
	"db":         {"database"},
	"dbs":        {"database"},
	"dm":         {"direct", "message"},
	"dms":        {"direct", "message"},
	"msg":        {"message"},
	"msgs":       {"message"},
	"env":        {"environment"},
	"envs":       {"environment"},
	"config":     {"configuration"},
	"configs":    {"configuration"},
	"org":        {"organization"},
	"orgs":       {"organization"},
	"info":       {"information"},
	"docs":       {"documentation"},
	"img":        {"image"},
	"pic":        {"image"},
	"pics":       {"image"},
	"vm":         {"virtual", "machine"},
	"vms":        {"virtual", "machine"},
	"pg":         {"postgres"},
	"postgresql": {"postgres"},
	"psql":       {"postgres"},
	"mongo":      {"mongodb"},
	"gh":         {"github"},
	"ado":        {"azure", "devops"},
	"gcp":        {"google", "cloud"},
	"gcs":        {"google", "cloud", "storage"},
	"tx":         {"transaction"},
	"txn":        {"transaction"},
	"txns":       {"transaction"},
	"dir":        {"directory"},
	"dirs":       {"directory"},
	"pwd":        {"password"},
	"passwd":     {"password"},
	"auth":       {"authentication"},
	"authn":      {"authentication"},
	"authz":      {"authorization"},
	"perms":      {"permission"},
	"admin":      {"administrator"},
	"ooo":        {"out", "office"},
	"todo":       {"todo"},
	"todos":      {"todo"},
	"qty":        {"quantity"},
	"addr":       {"address"},
	"num":        {"number"},
	"calc":       {"calculate"},
	"stats":      {"statistics"},
	"recs":       {"recommendation"},
	"ts":         {"typescript"},
	"js":         {"javascript"},
	"py":         {"python"},
	"md":         {"markdown"},
	"xlsx":       {"excel", "spreadsheet"},
	"xls":        {"excel", "spreadsheet"},
	"csv":        {"csv"},
	"sms":        {"sms", "text", "message"},
	"cta":        {"call", "action"},
	"url":        {"url", "link"},
	"urls":       {"url", "link"},
	"api":        {"api"},
	"ui":         {"interface"},
	"cli":        {"command", "line"},
	"ssl":        {"certificate"},
	"tls":        {"certificate"},
	"cert":       {"certificate"},
	"certs":      {"certificate"},
	"es":         {"elasticsearch"},
	"ec2":        {"ec2", "instance"},
	"s3":         {"s3", "bucket"},
	"ci":         {"continuous", "integration"},
	"iac":        {"infrastructure", "code"},
	"kv":         {"key", "value"},
	"faq":        {"question"},
	"eta":        {"arrival", "time"},
	"geo":        {"geolocation"},
	"attrs":      {"attribute"},
	"params":     {"parameter"},
	"param":      {"parameter"},
	"args":       {"argument"},
	"arg":        {"argument"},
	"fn":         {"function"},
	"func":       {"function"},
	"lambda":     {"function"},
	"sql":        {"sql", "query"},
	"mail":       {"email"},
	"mails":      {"email"},
	"emails":     {"email"},
	"jql":        {"jql", "query"},
	"wiki":       {"wiki"},
	"dns":        {"dns"},
	"ssh":        {"ssh"},
}

// synonymGroups lists words that name the same action or object. A query term
// in a group also matches the other members of its group, at synonymWeight.
// Members are written unstemmed; multi-word members are not used.
var synonymGroups = [][]string{
	// actions
	{"create", "add", "new", "make", "insert", "generate", "build", "spin", "provision", "register", "open", "start", "write"},
	{"delete", "remove", "drop", "destroy", "erase", "purge", "nuke", "trash", "discard", "wipe", "clear", "unregister", "uninstall"},
	{"get", "fetch", "retrieve", "read", "show", "view", "display", "describe", "see", "check", "inspect", "lookup", "detail"},
	{"list", "enumerate", "browse", "all", "index", "show"},
	{"update", "edit", "modify", "change", "set", "patch", "bump", "alter", "adjust", "tweak", "rename", "replace", "toggle", "configure"},
	{"search", "find", "query", "lookup", "locate", "filter", "look", "grep", "discover", "seek"},
	{"run", "execute", "invoke", "trigger", "launch", "kick", "fire", "call", "perform", "queue", "dispatch"},
	{"stop", "abort", "cancel", "kill", "terminate", "halt", "end", "interrupt", "shutdown"},
	{"send", "post", "publish", "broadcast", "notify", "deliver", "reply", "forward"},
	{"close", "complete", "finish", "resolve", "done", "mark", "tick", "check"},
	{"upload", "push", "attach", "import", "put", "ingest"},
	{"download", "export", "dump", "save", "backup", "pull"},
	{"copy", "duplicate", "clone", "replicate", "fork"},
	{"move", "transfer", "relocate", "drag", "migrate", "reassign"},
	{"restart", "reboot", "reload", "reset", "cycle"},
	{"revert", "rollback", "undo", "restore", "roll", "previous"},
	{"deploy", "release", "ship", "rollout", "publish", "promote"},
	{"assign", "allocate", "attach", "point", "link"},
	{"merge", "combine", "squash", "join"},
	{"approve", "accept", "review", "lgtm", "sign"},
	{"reject", "decline", "deny", "refuse"},
	{"schedule", "plan", "book", "reserve", "calendar", "appointment"},
	{"summarize", "summary", "digest", "overview", "report"},
	{"analyze", "analyse", "inspect", "audit", "diagnose", "investigate", "profile"},
	{"validate", "verify", "lint", "check", "test"},
	{"convert", "transform", "translate", "render", "format"},
	{"mount", "attach"},
	{"count", "number", "total", "tally"},
	{"monitor", "watch", "observe", "track"},
	{"subscribe", "follow", "watch"},
	{"upsert", "insert", "update"},
	{"invite", "add"},
	{"store", "save", "put", "set", "write", "persist", "cache", "keep"},
	{"all", "entire", "every", "whole"},
	{"endpoint", "route", "request"},
	{"extract", "scrape", "crawl", "parse"},
	{"archive", "hide", "shelve"},
	{"pause", "suspend", "freeze", "disable"},
	{"resume", "unpause", "enable", "continue"},
	// objects
	{"issue", "ticket", "bug", "incident", "problem", "story", "task"},
	{"message", "chat", "dm", "text", "note", "post"},
	{"email", "inbox", "mailbox"},
	{"file", "document", "doc", "attachment"},
	{"folder", "directory"},
	{"user", "member", "people", "person", "account", "profile", "employee", "teammate"},
	{"team", "group", "squad"},
	{"image", "picture", "photo", "screenshot", "snapshot"},
	{"error", "exception", "crash", "failure", "fault", "bug"},
	{"log", "entry", "trace", "event"},
	{"flag", "toggle", "feature"},
	{"comment", "note", "annotation", "remark"},
	{"label", "tag", "category"},
	{"repository", "project", "codebase"},
	{"table", "sheet", "spreadsheet", "grid", "workbook"},
	{"server", "droplet", "instance", "host", "machine", "node", "vps"},
	{"disk", "volume", "storage", "drive", "block"},
	{"price", "cost", "billing", "invoice", "charge", "payment"},
	{"refund", "chargeback", "dispute", "return"},
	{"weather", "forecast", "temperature"},
	{"direction", "route", "navigation", "path", "travel"},
	{"place", "location", "venue", "shop", "restaurant", "business", "poi"},
	{"deployment", "release", "version", "revision"},
	{"workflow", "automation", "pipeline", "flow"},
	{"job", "run", "task", "build", "pipeline", "execution"},
	{"graph", "chart", "plot", "diagram", "visualization"},
	{"website", "site", "page", "webpage", "url"},
	{"key", "secret", "token", "credential", "password"},
	{"variable", "env", "environment", "setting", "configuration"},
	{"contact", "customer", "lead", "client"},
	{"company", "organization", "account", "business"},
	{"alert", "warning", "alarm", "notification", "alertrule"},
	{"rule", "policy", "filter"},
	{"transcript", "caption", "subtitle"},
	{"column", "field", "attribute", "property"},
	{"row", "record", "entry", "item"},
	{"card", "ticket", "item"},
	{"board", "kanban", "project"},
	{"column", "section", "list", "status", "stage"},
	{"dependency", "blocker", "block", "prerequisite"},
	{"video", "clip", "movie"},
	{"meeting", "event", "call"},
	{"todo", "task", "reminder"},
	{"query", "question", "sql"},
	{"flight", "airline", "plane"},
	{"map", "geolocation", "geocode", "coordinate"},
	{"stock", "ticker", "equity", "share"},
	{"unhealthy", "broken", "failing", "down", "issue"},
	{"stuck", "hung", "hanging", "frozen"},
	{"old", "previous", "prior", "last"},
	{"latest", "recent", "newest", "last", "current"},
	{"bulk", "batch", "multiple", "many", "mass"},
	{"shell", "terminal", "exec", "command", "console"},
	{"permission", "access", "role", "privilege"},
	{"library", "package", "dependency", "module"},
	{"domain", "hostname", "dns"},
	{"url", "link", "address"},
	{"ip", "address"},
	{"floating", "reserved", "static"},
	// more actions
	{"start", "boot", "launch", "power", "resume", "activate"},
	{"shutdown", "poweroff", "deactivate", "disable", "stop"},
	{"grab", "fetch", "obtain", "load", "retrieve"},
	{"fix", "amend", "correct", "repair"},
	{"share", "grant", "invite", "permission", "collaborator"},
	{"revoke", "unshare", "withdraw"},
	{"react", "reaction", "emoji", "like", "upvote"},
	{"pin", "star", "bookmark", "favorite", "favourite"},
	{"mute", "snooze", "silence", "ignore"},
	{"reply", "respond", "answer", "comment"},
	{"mention", "tag", "ping", "notify"},
	{"delegate", "assign", "handoff", "owner", "assignee"},
	{"due", "deadline", "duedate"},
	{"priority", "urgent", "severity", "importance"},
	{"estimate", "point", "effort", "size"},
	{"sprint", "iteration", "cycle", "milestone"},
	{"epic", "initiative", "theme"},
	{"subtask", "checklist", "child"},
	{"click", "press", "tap"},
	{"type", "fill", "enter", "input"},
	{"scroll", "swipe"},
	{"navigate", "visit", "goto", "browse", "open"},
	{"hover", "mouseover"},
	{"wait", "sleep", "delay"},
	{"capture", "screenshot", "snapshot"},
	{"scale", "resize", "replica", "autoscale"},
	{"recover", "restore", "undelete"},
	{"compare", "diff", "difference", "change"},
	{"blame", "author", "annotate"},
	{"summarize", "tldr", "recap"},
	{"visualize", "chart", "graph", "plot", "dashboard"},
	{"forecast", "predict", "projection"},
	{"translate", "localize"},
	{"geocode", "coordinate", "latitude", "longitude"},
	{"nearby", "near", "around", "closest"},
	{"convert", "exchange"},
	// more objects
	{"customer", "client", "buyer", "shopper"},
	{"subscription", "plan", "recurring", "membership"},
	{"coupon", "discount", "promo", "promotion", "voucher"},
	{"product", "sku", "catalog", "merchandise"},
	{"order", "purchase", "checkout", "cart"},
	{"shipment", "delivery", "shipping", "tracking", "parcel"},
	{"free", "available", "availability", "busy", "slot"},
	{"timezone", "zone", "utc"},
	{"cpu", "memory", "usage", "utilization", "load", "metric"},
	{"uptime", "health", "healthy", "healthcheck", "status"},
	{"latency", "slow", "performance", "duration", "speed"},
	{"incident", "outage", "downtime", "page"},
	{"backup", "snapshot", "dump", "archive"},
	{"container", "pod", "docker"},
	{"cluster", "node", "fleet"},
	{"certificate", "ssl", "tls", "https"},
	{"firewall", "security", "ingress", "egress"},
	{"bucket", "blob", "object", "storage"},
	{"function", "lambda", "serverless", "worker"},
	{"collection", "table", "dataset"},
	{"schema", "structure", "mapping", "definition", "ddl"},
	{"migration", "migrate", "upgrade"},
	{"commit", "revision", "changeset"},
	{"branch", "ref", "head"},
	{"note", "page", "notebook", "memo"},
	{"space", "workspace", "folder"},
	{"wiki", "knowledge", "documentation", "handbook"},
	{"channel", "room", "conversation", "thread"},
	{"presence", "away", "online"},
	{"deal", "opportunity", "lead", "prospect"},
	{"case", "ticket", "request", "support"},
	{"analytics", "statistics", "insight", "metric", "report"},
	{"web", "internet", "online", "google"},
	{"quote", "price", "ticker", "stock"},
	{"currency", "money", "amount", "fx"},
	{"record", "dns", "entry"},
	{"draft", "compose", "unsent"},
	{"spam", "junk"},
	{"unread", "unseen", "new"},
	{"secret", "credential", "apikey", "token", "password"},
	{"photo", "image", "picture", "media"},
	{"audio", "sound", "voice", "speech"},
	{"video", "recording", "stream"},
	{"contact", "person", "people", "addressbook"},
	{"role", "group", "team"},
	{"app", "application", "service"},
	{"environment", "stage", "staging", "production", "prod", "dev"},
	{"prod", "production", "live"},
}

// synonymWeight is the weight of a synonym relative to the term itself.
const synonymWeight = 0.45

// synonyms maps a stemmed term to the stemmed members of its groups, itself
// excluded.
var synonyms = buildSynonyms()

func buildSynonyms() map[string][]string {
	m := map[string]map[string]bool{}
	for _, g := range synonymGroups {
		stems := make([]string, 0, len(g))
		for _, w := range g {
			for _, t := range analyze(w, nil) {
				stems = append(stems, t.term)
			}
		}
		for _, a := range stems {
			if m[a] == nil {
				m[a] = map[string]bool{}
			}
			for _, b := range stems {
				if a != b {
					m[a][b] = true
				}
			}
		}
	}
	out := make(map[string][]string, len(m))
	for k, set := range m {
		list := make([]string, 0, len(set))
		for w := range set {
			list = append(list, w)
		}
		sortStrings(list)
		out[k] = list
	}
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && strings.Compare(s[j-1], s[j]) > 0; j-- {
			s[j-1], s[j] = s[j], s[j-1]
		}
	}
}
