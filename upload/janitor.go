package upload

import (
	"context"
	"database/sql"
	"time"
)

// Expire removes sessions idle past the TTL (releasing what they held; their
// chunks become garbage unless referenced elsewhere), merged sessions past
// their retention, and stale challenges. It returns how many sessions it
// removed.
func (s *Service) Expire(ctx context.Context) (int, error) {
	now := s.now()
	openCut, mergedCut := now.Add(-s.ttl).UnixNano(), now.Add(-s.keep).UnixNano()
	const cond = `(state = 'open' AND touched_ns < ?) OR (state = 'merged' AND touched_ns < ?)`
	removed := 0
	for {
		rows, err := s.db.ReadDB().QueryContext(ctx, `SELECT id FROM upload_sessions WHERE `+cond+` LIMIT 500`, openCut, mergedCut)
		if err != nil {
			return removed, wrap("upload.Expire", "", err)
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return removed, wrap("upload.Expire", "", err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		if len(ids) == 0 {
			break
		}
		for _, id := range ids {
			mu := s.stripe(id)
			mu.Lock()
			err := s.dropStep(ctx, id, func(tx *sql.Tx) (bool, error) {
				// Re-check inside the transaction: a chunk may have touched it.
				var n int
				if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM upload_sessions WHERE id = ? AND (`+cond+`)`, id, openCut, mergedCut).Scan(&n); err != nil || n == 0 {
					return false, err
				}
				removed++
				return true, nil
			})
			mu.Unlock()
			if err != nil {
				return removed, wrap("upload.Expire", "", err)
			}
		}
		if len(ids) < 500 {
			break
		}
	}
	_, err := s.db.DB().ExecContext(ctx, `DELETE FROM upload_challenges WHERE expires_ns < ?`, now.UnixNano())
	if removed > 0 {
		s.log.Info("expired upload sessions", "sessions", removed)
	}
	return removed, wrap("upload.Expire", "", err)
}

// Run expires sessions every interval until ctx ends.
func (s *Service) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Expire(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("upload janitor", "err", err)
			}
		}
	}
}
