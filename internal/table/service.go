package table

import (
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
)

// serviceLayout returns the tables of Service, Endpoints and
// EndpointSlice, as Kubernetes' printers lay them out.
func serviceLayout(kind string) (layout, bool) {
	switch kind {
	case "Service":
		return layout{row: typed(serviceRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Type", "string", "The type of the service."),
			col("Cluster-IP", "string", "The cluster IP of the service."),
			col("External-IP", "string", "The external IP of the service."),
			col("Port(s)", "string", "The ports of the service."),
			col("Age", "string", descAge),
			wide("Selector", "string", "Route service traffic to pods with label keys and values matching this selector."),
		}}, true
	case "Endpoints":
		return layout{row: typed(endpointsRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Endpoints", "string", "Endpoints of the service."),
			col("Age", "string", descAge),
		}}, true
	case "EndpointSlice":
		return layout{row: typed(endpointSliceRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("AddressType", "string", "The type of addresses in the slice."),
			col("Ports", "string", "The ports of the slice's endpoints."),
			col("Endpoints", "string", "Addresses of the slice's endpoints."),
			col("Age", "string", descAge),
		}}, true
	}
	return layout{}, false
}

// maxShown is how many endpoints or ports a cell lists before "+ N more...".
const maxShown = 3

func serviceRow(s *api.Service, now time.Time) api.TableRow {
	clusterIP := s.Spec.ClusterIP
	if clusterIP == "" {
		clusterIP = "<none>"
	}
	return api.TableRow{Cells: []any{
		s.Name, string(s.Spec.Type), clusterIP, ServiceExternalIP(s), ServicePorts(s),
		Age(s.CreationTimestamp.Time, now), FormatLabels(s.Spec.Selector),
	}}
}

// ServiceExternalIP is kubectl's EXTERNAL-IP cell: the external name, the
// load balancer's ingress points ("<pending>" until there are any), the
// external IPs, or "<none>".
func ServiceExternalIP(s *api.Service) string {
	switch s.Spec.Type {
	case api.ServiceTypeExternalName:
		return s.Spec.ExternalName
	case api.ServiceTypeLoadBalancer:
		var ips []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ips = append(ips, in.IP)
			} else if in.Hostname != "" {
				ips = append(ips, in.Hostname)
			}
		}
		ips = append(ips, s.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	}
	if len(s.Spec.ExternalIPs) > 0 {
		return strings.Join(s.Spec.ExternalIPs, ",")
	}
	return "<none>"
}

// ServicePorts is kubectl's PORT(S) cell: "80/TCP,443:30443/TCP".
func ServicePorts(s *api.Service) string {
	if len(s.Spec.Ports) == 0 {
		return "<none>"
	}
	parts := make([]string, len(s.Spec.Ports))
	for i, p := range s.Spec.Ports {
		port := strconv.Itoa(int(p.Port))
		if p.NodePort > 0 {
			port += ":" + strconv.Itoa(int(p.NodePort))
		}
		parts[i] = port + "/" + string(p.Protocol)
	}
	return strings.Join(parts, ",")
}

func endpointsRow(e *api.Endpoints, now time.Time) api.TableRow {
	return api.TableRow{Cells: []any{e.Name, FormatEndpoints(e), Age(e.CreationTimestamp.Time, now)}}
}

// FormatEndpoints is kubectl's ENDPOINTS cell: the ready "ip:port" pairs,
// three at most and then "+ N more...", or "<none>".
func FormatEndpoints(e *api.Endpoints) string {
	var list []string
	n := 0
	for _, ss := range e.Subsets {
		for _, a := range ss.Addresses {
			if len(ss.Ports) == 0 {
				n++
				if len(list) < maxShown {
					list = append(list, a.IP)
				}
				continue
			}
			for _, p := range ss.Ports {
				n++
				if len(list) < maxShown && p.Port != nil {
					list = append(list, a.IP+":"+strconv.Itoa(int(*p.Port)))
				}
			}
		}
	}
	return shownList(list, n, "<none>")
}

func endpointSliceRow(s *api.EndpointSlice, now time.Time) api.TableRow {
	var ports []string
	for _, p := range s.Ports {
		if len(ports) == maxShown {
			break
		}
		if p.Port == nil {
			ports = append(ports, "<unset>")
		} else {
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		}
	}
	var addrs []string
	n := 0
	for _, ep := range s.Endpoints {
		for _, a := range ep.Addresses {
			n++
			if len(addrs) < maxShown {
				addrs = append(addrs, a)
			}
		}
	}
	return api.TableRow{Cells: []any{
		s.Name, s.AddressType, shownList(ports, len(s.Ports), "<unset>"), shownList(addrs, n, "<unset>"),
		Age(s.CreationTimestamp.Time, now),
	}}
}

// shownList joins list (the first of total items) with commas, adding
// "+ N more..." for the rest, or returns empty when there is nothing.
func shownList(list []string, total int, empty string) string {
	if total == 0 {
		return empty
	}
	out := strings.Join(list, ",")
	if total > len(list) {
		out += " + " + strconv.Itoa(total-len(list)) + " more..."
	}
	return out
}
