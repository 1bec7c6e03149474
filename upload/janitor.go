package upload

import (
	"context"
	"time"

	"netdisk/internal/tick"
)

// Expire removes sessions idle past the TTL (releasing what they held; their
// chunks become garbage unless referenced elsewhere), merged sessions past
// their retention, and stale challenges. It returns how many sessions it
// removed.
func (s *Service) Expire(ctx context.Context) (int, error) {
	now := s.now()
	openCut, mergedCut := now.Add(-s.ttl), now.Add(-s.keep)
	const batch = 500
	removed := 0
	for {
		ids, err := s.db.IdleSessions(ctx, openCut, mergedCut, batch)
		if err != nil {
			return removed, err
		}
		for _, id := range ids {
			mu := s.stripe(id)
			mu.Lock()
			// Dropped only if still idle when the store looks: a chunk may
			// have touched it meanwhile.
			dropped, err := s.d.DropIdleSession(ctx, id, openCut, mergedCut, s.now())
			mu.Unlock()
			if err != nil {
				return removed, err
			}
			if dropped {
				removed++
			}
		}
		if len(ids) < batch {
			break
		}
	}
	_, err := s.db.DeleteExpiredChallenges(ctx, now)
	if removed > 0 {
		s.log.Info("expired upload sessions", "sessions", removed)
	}
	return removed, err
}

// Run expires sessions every interval until ctx ends.
func (s *Service) Run(ctx context.Context, every time.Duration) {
	tick.Every(ctx, every, func(ctx context.Context) {
		if _, err := s.Expire(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("upload janitor", "err", err)
		}
	})
}
