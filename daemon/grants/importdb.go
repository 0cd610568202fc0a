package grants

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/requirement"
)

// ImportReport is what an import did (API.md): how many local grants were
// restored, how many rows landed declared and imported, and every dropped
// row with its reason.
type ImportReport struct {
	Restored int
	Demoted  int
	Dropped  []DroppedRow
	// Landed lists every row that landed declared and imported (Demoted
	// of them), in file order.
	Landed []LandedRow
}

// LandedRow is a row import landed declared and imported. Replaced says it
// replaced a local row; CredentialsCleared that the local row's
// requirement or hosts differ from it, so the slot's credential slice
// (and its _connection state) was wiped in the import's transaction: an
// import never re-points a stored credential at hosts nobody approved.
type LandedRow struct {
	AppID              string
	Slot               string
	Replaced           bool
	CredentialsCleared bool
}

// DroppedRow names a row import refused. Reason is a fixed sentence (or
// names the rules that failed); it never quotes the file's values.
type DroppedRow struct {
	AppID  string
	Slot   string
	Reason string
}

// Import reconciles the snug_connections rows of the user DB at path.
// The file is untrusted input: every row goes through
// one of three branches, in one transaction.
//
//  1. Byte-identical (app_id, slot, requirement_json, allowed_hosts) to a
//     locally approved row: the local grant is restored as it is, staged
//     change included.
//  2. Anything else that validates strictly lands declared with imported = 1,
//     approved_at cleared and allowed_hosts recomputed from the requirement;
//     the file's status, allowed_hosts and pending column are never
//     trusted. The borrow ban applies as on every proposer
//     channel: a row that names or reaches a registry provider lands with
//     the registry's pinned values, and provenance "registry" is kept only
//     when the registry really resolved the row. A local revoked row is
//     never overwritten, and a new slot still counts against the cap.
//  3. Structurally unusable rows are dropped and reported, and so is every
//     copy of an (app_id, slot) the file lists more than once.
//
// The file's snug_secrets are never read.
func (d *Records) Import(ctx context.Context, path string) (ImportReport, error) {
	rows, err := store.ReadUserDB(ctx, path)
	if err != nil {
		if errors.Is(err, store.ErrNotUserDB) {
			d.log.Info("import refused", "err", err)
			return ImportReport{}, errcode.Wrap(errcode.ImportInvalid, "the file is not an importable user DB", err)
		}
		return ImportReport{}, Internal(d.log, "read import file", err)
	}
	// (app_id, slot) is the table's primary key, but a hostile file can
	// drop the key and list a slot twice — say once byte-identical to the
	// local grant and once not — so that the outcome hangs on row order.
	// Such a file does not say what the slot holds: every copy is dropped.
	copies := map[[2]string]int{}
	for _, in := range rows {
		copies[[2]string{in.AppID, in.Slot}]++
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	var (
		report  ImportReport
		touched [][2]string
		apps    map[string]*AppGrants
	)
	err = d.store.Update(ctx, func(tx *store.Tx) error {
		report, touched, apps = ImportReport{}, nil, map[string]*AppGrants{}
		for _, in := range rows {
			var (
				out    outcome
				reason string
				err    error
			)
			if in.Unusable == "" && copies[[2]string{in.AppID, in.Slot}] > 1 {
				reason = "the file lists this app's slot more than once"
			} else {
				out, reason, err = d.reconcile(tx, in)
			}
			switch {
			case err != nil:
				return err
			case reason != "":
				report.Dropped = append(report.Dropped, DroppedRow{AppID: in.AppID, Slot: in.Slot, Reason: reason})
			case out.landed:
				report.Demoted++
				report.Landed = append(report.Landed, LandedRow{AppID: in.AppID, Slot: in.Slot, Replaced: out.replaced, CredentialsCleared: out.cleared})
				touched = append(touched, [2]string{in.AppID, in.Slot})
			default:
				report.Restored++
			}
		}
		// The index entries of the apps that changed, read from this
		// transaction: published after the commit, they cannot miss it.
		for _, t := range touched {
			if apps[t[0]] != nil {
				continue
			}
			rows, err := tx.Connections(t[0])
			if err != nil {
				return err
			}
			apps[t[0]] = BuildAppGrants(rows)
		}
		return nil
	})
	if err != nil {
		return ImportReport{}, Internal(d.log, "import", err)
	}
	for app, a := range apps {
		d.publishApp(app, a)
	}
	for _, t := range touched {
		d.ConnectionChanged(t[0], t[1])
	}
	d.log.Info("import", "restored", report.Restored, "demoted", report.Demoted, "dropped", len(report.Dropped))
	d.journalImport(ctx, report)
	return report, nil
}

// outcome is what reconcile did with a row that was not dropped.
type outcome struct {
	landed   bool // branch 2; false: branch 1, the local grant stands
	replaced bool // it replaced a local row
	cleared  bool // and wiped that slot's credential slice
}

// reconcile runs one incoming row through the three branches. It reports
// whether the row landed (branch 2) or, with a reason, why it was dropped;
// neither means the local grant was restored (branch 1).
func (d *Records) reconcile(tx *store.Tx, in store.ImportRow) (out outcome, reason string, err error) {
	if in.Unusable != "" {
		return outcome{}, "structurally unusable: " + in.Unusable, nil
	}
	if CheckAppID(in.AppID) != nil {
		return outcome{}, "the app id is not 1-128 characters of text", nil
	}
	if !requirement.ValidSlot(in.Slot) {
		return outcome{}, "the slot does not match " + requirement.SlotPattern, nil
	}
	r, vs := parseStored(in.RequirementJSON)
	if len(vs) > 0 {
		return outcome{}, "the requirement fails validation: " + ruleList(vs), nil
	}
	if r.Slot != in.Slot {
		return outcome{}, "the requirement names another slot than its row", nil
	}
	prov := store.Provenance(in.Provenance)
	if !validProvenance(Provenance(prov)) {
		return outcome{}, "the provenance is not registry, inference, user_docs, starter or user", nil
	}

	var local *store.Connection
	switch row, err := tx.Connection(in.AppID, in.Slot); {
	case err == nil:
		local = &row
	case !errors.Is(err, store.ErrNotFound):
		return outcome{}, "", err
	}
	if local != nil {
		switch Status(local.Status) {
		case StatusRevoked:
			return outcome{}, "the local connection is revoked; import never overwrites a tombstone", nil
		case StatusApproved:
			if in.RequirementJSON == local.RequirementJSON && in.AllowedHosts == local.AllowedHosts {
				return outcome{}, "", nil // branch 1: the local grant stands
			}
		}
	} else {
		n, err := tx.CountConnections(in.AppID)
		if err != nil {
			return outcome{}, "", err
		}
		if n >= MaxSlotsPerApp {
			return outcome{}, fmt.Sprintf("the app already has %d connections", MaxSlotsPerApp), nil
		}
	}

	// The file is one more channel a requirement arrives on, and the borrow
	// ban binds them all: a row naming a registry provider with hosts of
	// its own would otherwise reach review (and approval) under that
	// provider's name. A claimed "registry" the registry does not bear out
	// is read as the strongest review posture, never as pinned values.
	res, err := d.registry.Resolve(r)
	if err != nil {
		return outcome{}, "the registry refuses the requirement: " + registryViolation(err).Rule, nil
	}
	switch {
	case res.Borrowed:
		r, prov = res.Requirement, store.ProvenanceRegistry
	case prov == store.ProvenanceRegistry:
		prov = store.ProvenanceInference
	}

	canonical := r.Canonical()
	row := store.Connection{
		AppID:              in.AppID,
		Slot:               in.Slot,
		RequirementJSON:    canonical,
		RequirementVersion: 1,
		Provenance:         prov,
		Confidence:         in.Confidence,
		Status:             store.StatusDeclared,
		Imported:           true,
		AllowedHosts:       requirement.HostsJSON(requirement.DeriveAllowedHosts(r)),
	}
	out = outcome{landed: true}
	if local != nil {
		row.CreatedAt = local.CreatedAt
		row.RevokedAt = local.RevokedAt // a tombstone survives
		row.RequirementVersion = nextVersion(local.RequirementVersion, local.RequirementJSON, canonical)
		// The slot's credentials were entered for the local row; the
		// file's row may name other hosts. Keeping them would let one
		// approval send the old credential to the file's hosts, so they
		// go in this transaction unless the rows ask for the same.
		out.replaced = true
		if differs(local, canonical, row.AllowedHosts) {
			if _, err := tx.DeleteSlotSecrets(in.AppID, in.Slot); err != nil {
				return outcome{}, "", err
			}
			out.cleared = true
		}
		err := tx.PutReplaced(in.AppID, in.Slot, store.Replaced{
			RequirementJSON: local.RequirementJSON, RequirementVersion: local.RequirementVersion, Status: local.Status,
			AllowedHosts: local.AllowedHosts, GrantedAt: local.ApprovedAt, CredentialsCleared: out.cleared,
		})
		if err != nil {
			return outcome{}, "", err
		}
	}
	if _, err := tx.UpsertConnection(row); err != nil {
		return outcome{}, "", err
	}
	if err := tx.DeleteStagedOrigin(in.AppID, in.Slot); err != nil {
		return outcome{}, "", err
	}
	return out, "", nil
}

// differs reports whether an imported row (its canonical requirement and
// derived hosts) asks for other than the local row it replaces: another
// canonical requirement, other derived hosts, or (for a grant) hosts
// other than its frozen ceiling.
func differs(local *store.Connection, canonical, hostsJSON string) bool {
	if local.RequirementJSON != canonical {
		return true
	}
	if Status(local.Status) == StatusApproved && local.AllowedHosts != hostsJSON {
		return true
	}
	r, vs := parseStored(local.RequirementJSON)
	return len(vs) > 0 || requirement.HostsJSON(requirement.DeriveAllowedHosts(r)) != hostsJSON
}

func validProvenance(p Provenance) bool {
	switch p {
	case ProvenanceRegistry, ProvenanceInference, ProvenanceUserDocs, ProvenanceStarter, ProvenanceUser:
		return true
	}
	return false
}

// ruleList names the distinct rules of vs, sorted, for a report line.
func ruleList(vs []requirement.Violation) string {
	var rules []string
	for _, v := range vs {
		if !slices.Contains(rules, v.Rule) {
			rules = append(rules, v.Rule)
		}
	}
	slices.Sort(rules)
	return strings.Join(rules, ", ")
}

// Export writes a copy of the user DB to dest: snug_connections only, every
// secret dropped and the file vacuumed so freed pages carry nothing
// (DESIGN.md Storage). Exports never carry secrets in v1.
func (d *Records) Export(ctx context.Context, dest string) error {
	if err := d.store.Export(ctx, dest); err != nil {
		return Internal(d.log, "export", err)
	}
	return nil
}
