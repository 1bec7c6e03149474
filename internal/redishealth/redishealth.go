// Package redishealth tells the log once when the daemon's Redis goes away
// and once when it answers again. Every user of Redis (the quota ledger, the
// locks, the async jobs, the login throttle, the leases) polls it or calls
// it per request, so while it is down each of them fails every second or
// so; were each to say so, and go-redis's own pool to print its dial
// failures beside them (outside slog, so outside --log-json), an outage
// would fill the log at several lines a second. A Watch sees every call of
// one client (a go-redis hook) and logs the transitions alone; the users
// log their Redis failures as detail (debug), and go-redis's own lines go
// through slog (Logger).
//
// It is not a health check: it never calls Redis by itself (Check at start
// excepted), it only watches what the daemon's calls find.
package redishealth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/errs"
	"netdisk/internal/rediserr"
)

// Consequences is what an unreachable Redis means to the users of the
// daemon, said in the line that reports it.
const Consequences = "uploads, PUTs and copies, locks and async downloads answer 503 until it is back"

// Burst and Refill bound the transition lines of a Redis that flaps (comes
// and goes every few seconds): Burst lines at once (two whole outages),
// then one per Refill. A transition not logged for now is logged with the
// next call Redis answers (or fails) once a line is allowed, so the last
// line always tells the state.
const (
	Burst  = 4
	Refill = 30 * time.Second
)

// Watch follows one client's Redis through the results of its calls.
type Watch struct {
	log  *slog.Logger
	now  func() time.Time
	addr string

	mu                    sync.Mutex
	started               bool      // Check ran: transitions are logged from then on
	down                  bool      // cmdFailed || dialFailed
	upAt                  time.Time // when down last became false
	cmdFailed, dialFailed bool      // what the last conclusive command, dial attempt found
	epoch                 uint64    // counts the changes of down: a call begun before the last one is stale
	reported              bool      // the state the log last told (true: down)
	since                 time.Time // when the reported state began
	lastErr               error     // the latest failure, for the lines
	failed                int64     // calls failed since the reported outage began
	lines                 bucket    // the transition lines' budget
	libLines              bucket    // go-redis's own warnings' budget
}

// bucket is a token bucket of log lines: Burst at once, one per Refill.
type bucket struct {
	tokens   float64
	refilled time.Time
}

// take takes a token at now if there is one.
func (b *bucket) take(now time.Time) bool {
	if b.refilled.IsZero() {
		b.tokens = Burst
	} else {
		b.tokens = min(Burst, b.tokens+float64(now.Sub(b.refilled))/float64(Refill))
	}
	b.refilled = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// New returns a Watch of the Redis at addr logging to log; now is the
// clock of its rate limit (nil: time.Now).
func New(addr string, log *slog.Logger, now func() time.Time) *Watch {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Watch{log: log, now: now, addr: addr}
}

// Attach makes w watch rdb's calls and routes go-redis's own log through
// it (see Logger: the go-redis logger is the process's, so the last client
// attached wins).
func (w *Watch) Attach(rdb *redis.Client) {
	rdb.AddHook(hook{w})
	redis.SetLogger(Logger{w})
	watches.Store(w, struct{}{})
}

// Detach stops w counting for Level (its client is closed).
func (w *Watch) Detach() { watches.Delete(w) }

// Check pings Redis once and logs whether the daemon starts with it: an
// unreachable Redis at start is reported in one line saying the daemon
// serves anyway and what fails until Redis answers. From then on w logs
// the transitions its client's calls find.
func (w *Watch) Check(ctx context.Context, rdb *redis.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err := rdb.Ping(ctx).Err()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = true
	w.since = w.now()
	if err != nil {
		w.cmdFailed = true
		w.setDown(true)
		w.reported, w.lastErr, w.failed = true, err, 1
		w.log.Warn("redis unreachable at start; serving anyway: "+Consequences, "redis", w.addr, "err", err)
		return err
	}
	w.setDown(false)
	w.reported = false
	w.log.Info("redis connected", "redis", w.addr)
	return nil
}

// Tail is how long after Redis came back its users' failures still count
// as the outage's: go-redis probes a pool whose dials all failed once a
// second, and answers its commands with the last dial error meanwhile.
const Tail = 5 * time.Second

// watches are the process's Watches, for Level.
var watches sync.Map // *Watch → struct{}

// setDown records what the calls found (w.mu held).
func (w *Watch) setDown(down bool) {
	if down != w.down {
		w.epoch++
		if !down {
			w.upAt = w.now()
		}
	}
	w.down = down
}

// quiet says whether w's Redis is away or came back less than Tail ago.
func (w *Watch) quiet() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.down || (!w.upAt.IsZero() && w.now().Sub(w.upAt) < Tail)
}

// Level is the level to log a failure at that would otherwise be logged
// at usual: debug when err is a dependency being away (errs.Unavailable,
// or a go-redis error saying so) while a Watch knows its Redis is away (or
// just came back), since that Watch's line told it once for every user of
// Redis; usual otherwise. So an outage is one line, and an Unavailable
// failure with Redis up (a database away) keeps its level.
func Level(err error, usual slog.Level) slog.Level {
	if err == nil {
		return usual
	}
	k := errs.KindOf(err)
	if !errs.Classified(err) {
		k = rediserr.Kind(err) // a go-redis error as it came
	}
	if k != errs.Unavailable {
		return usual
	}
	lvl := usual
	watches.Range(func(w, _ any) bool {
		if w.(*Watch).quiet() {
			lvl = slog.LevelDebug
			return false
		}
		return true
	})
	return lvl
}

// begin returns the epoch a call begins in.
func (w *Watch) begin() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.epoch
}

// Down reports whether the last conclusive call failed.
func (w *Watch) Down() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.down
}

// observe records one call's result: a failure that is Redis being away
// (refused, timed out, LOADING…) means down, an answer (a reply error
// included: Redis answered) means up, and the caller's cancellation tells
// nothing (its deadline does: see below). dial says the call was a dial
// attempt: Redis is up again only once a command is answered and a dial
// succeeds, because once every dial
// of its pool has failed go-redis answers commands with the last dial
// error, without dialing, until its own probe connects (commands of its
// other pools may be answered meanwhile).
//
// Only a call begun since the last change counts: calls in flight when
// Redis went (or came back) finish with the old news.
func (w *Watch) observe(began uint64, dial bool, err error) {
	failed := false
	if err != nil && !errors.Is(err, redis.Nil) {
		if errors.Is(err, context.Canceled) {
			return // the caller gave up: no news about Redis
		}
		// A deadline is the daemon's own timeout on a call (the
		// throttle's second, a scrape's two): Redis did not answer in
		// time, as rediserr says.
		failed = rediserr.Kind(err) == errs.Unavailable
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if began != w.epoch && failed {
		return
	}
	if dial {
		w.dialFailed = failed
	} else {
		w.cmdFailed = failed
	}
	down := w.cmdFailed || w.dialFailed
	w.setDown(down)
	if failed {
		w.lastErr = err
		if w.reported {
			w.failed++
		}
	}
	if !w.started || down == w.reported {
		return
	}
	now := w.now()
	if !w.lines.take(now) {
		return
	}
	if down {
		w.log.Warn("redis unreachable: "+Consequences, "redis", w.addr, "err", err)
		w.failed = 1
	} else {
		w.log.Info("redis reachable again", "redis", w.addr, "down_for", now.Sub(w.since).Round(time.Millisecond).String(),
			"failed_calls", w.failed, "last_err", fmt.Sprint(w.lastErr))
		w.failed = 0
	}
	w.reported, w.since = down, now
}

// hook is the go-redis hook feeding a Watch.
type hook struct{ w *Watch }

func (h hook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		began := h.w.begin()
		c, err := next(ctx, network, addr)
		h.w.observe(began, true, err)
		return c, err
	}
}

func (h hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		began := h.w.begin()
		err := next(ctx, cmd)
		h.w.observe(began, false, notDial(err))
		return err
	}
}

func (h hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		began := h.w.begin()
		err := next(ctx, cmds)
		h.w.observe(began, false, notDial(err))
		return err
	}
}

// notDial hides a dial error from a command's result: DialHook saw the
// dial itself, and the error may be the pool's last one, repeated (see
// observe).
func notDial(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return context.Canceled // no news
	}
	return err
}

// Logger carries go-redis's own log lines (its pool's dial failures and
// the like) into slog, so they follow --log-level and --log-json. While the
// Watch knows Redis is away they are the outage's detail, logged at debug
// (the Watch's line said it); otherwise they are news, logged as warnings.
// Either way they are rate-limited (Burst, then one per Refill; the rest
// dropped): go-redis repeats them at every failed dial, several a second.
type Logger struct{ w *Watch }

// Printf implements go-redis's internal logging interface.
func (l Logger) Printf(ctx context.Context, format string, v ...any) {
	l.w.mu.Lock()
	allowed, down := l.w.libLines.take(l.w.now()), l.w.down
	l.w.mu.Unlock()
	if !allowed {
		return
	}
	lvl := slog.LevelWarn
	if down {
		lvl = slog.LevelDebug
	}
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	l.w.log.Log(ctx, lvl, "go-redis: "+msg, "redis", l.w.addr)
}

// Edge logs a recurring job's failures (a loop polling Redis every second,
// a call made per request) by their edges: the first failure of a run,
// then nothing until the job works again, which is logged with the count
// of failures between. The first failure's level is Level's, so during a
// Redis outage both lines are debug (the Watch's lines tell it) while a
// failure of another cause stays a warning, once. The zero Edge is ready.
type Edge struct {
	mu      sync.Mutex
	failing bool
	quiet   bool // the first failure was logged at debug
	n       int64
}

// Failed records a failure of the job; the first of a run is logged at
// Level(err, usual) with msg, err and args.
func (e *Edge) Failed(ctx context.Context, log *slog.Logger, usual slog.Level, msg string, err error, args ...any) {
	e.mu.Lock()
	first := !e.failing
	e.failing = true
	e.n++
	lvl := Level(err, usual)
	if first {
		e.quiet = lvl == slog.LevelDebug
	}
	e.mu.Unlock()
	if first {
		log.Log(ctx, lvl, msg, append(args, "err", err)...)
	}
}

// OK records a success of the job: after failures, msg is logged with
// their count (at debug when the first was).
func (e *Edge) OK(ctx context.Context, log *slog.Logger, msg string, args ...any) {
	e.mu.Lock()
	was, quiet, n := e.failing, e.quiet, e.n
	e.failing, e.n = false, 0
	e.mu.Unlock()
	if !was {
		return
	}
	lvl := slog.LevelInfo
	if quiet {
		lvl = slog.LevelDebug
	}
	log.Log(ctx, lvl, msg, append(args, "failures", n)...)
}
