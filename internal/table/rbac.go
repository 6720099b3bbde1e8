package table

import (
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
)

// rbacLayoutFor returns the tables of ServiceAccount and the RBAC kinds,
// as Kubernetes prints them.
func rbacLayoutFor(kind string) (layout, bool) {
	binding := func(row func(api.Object, time.Time) (api.TableRow, error)) layout {
		return layout{row: row, columns: []api.TableColumnDefinition{
			nameCol(),
			col("Role", "string", "RoleRef is the reference to the role the binding grants."),
			col("Age", "string", descAge),
			wide("Users", "string", "Users in the binding."),
			wide("Groups", "string", "Groups in the binding."),
			wide("ServiceAccounts", "string", "ServiceAccounts in the binding."),
		}}
	}
	switch kind {
	case "ServiceAccount":
		return layout{row: typed(serviceAccountRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Secrets", "string", "Secrets is the number of secrets the service account references."),
			col("Age", "string", descAge),
		}}, true
	case "Role", "ClusterRole":
		row := typed(roleRow)
		if kind == "ClusterRole" {
			row = typed(clusterRoleRow)
		}
		return layout{row: row, columns: []api.TableColumnDefinition{
			nameCol(),
			col("Created At", "date", "The time the role was created."),
		}}, true
	case "RoleBinding":
		return binding(typed(roleBindingRow)), true
	case "ClusterRoleBinding":
		return binding(typed(clusterRoleBindingRow)), true
	}
	return layout{}, false
}

func serviceAccountRow(sa *api.ServiceAccount, now time.Time) api.TableRow {
	return api.TableRow{Cells: []any{sa.Name, int64(len(sa.Secrets)), Age(sa.CreationTimestamp.Time, now)}}
}

func createdAt(t api.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func roleRow(r *api.Role, _ time.Time) api.TableRow {
	return api.TableRow{Cells: []any{r.Name, createdAt(r.CreationTimestamp)}}
}

func clusterRoleRow(r *api.ClusterRole, _ time.Time) api.TableRow {
	return api.TableRow{Cells: []any{r.Name, createdAt(r.CreationTimestamp)}}
}

// bindingCells are the cells of a binding: name, Kind/name of the role,
// age, and its subjects by kind.
func bindingCells(name string, ref api.RoleRef, subjects []api.Subject, created api.Time, now time.Time) []any {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case api.SubjectKindUser:
			users = append(users, s.Name)
		case api.SubjectKindGroup:
			groups = append(groups, s.Name)
		case api.SubjectKindServiceAccount:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	role := ""
	if ref.Kind != "" || ref.Name != "" {
		role = ref.Kind + "/" + ref.Name
	}
	return []any{name, role, Age(created.Time, now), strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}

func roleBindingRow(b *api.RoleBinding, now time.Time) api.TableRow {
	return api.TableRow{Cells: bindingCells(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp, now)}
}

func clusterRoleBindingRow(b *api.ClusterRoleBinding, now time.Time) api.TableRow {
	return api.TableRow{Cells: bindingCells(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp, now)}
}
