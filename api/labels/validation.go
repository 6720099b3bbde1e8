package labels

import (
	"fmt"
	"regexp"
	"strings"
)

// Length limits applied by the validation helpers in this package.
const (
	// QualifiedNameMaxLength is the maximum length of the name part of a
	// qualified name such as a label key.
	QualifiedNameMaxLength = 63
	// LabelValueMaxLength is the maximum length of a label value.
	LabelValueMaxLength = 63
	// DNS1123LabelMaxLength is the maximum length of a DNS-1123 label.
	DNS1123LabelMaxLength = 63
	// DNS1123SubdomainMaxLength is the maximum length of a DNS-1123
	// subdomain, and therefore of a label key prefix.
	DNS1123SubdomainMaxLength = 253
)

const (
	qnameCharFmt        = "[A-Za-z0-9]"
	qnameExtCharFmt     = "[-A-Za-z0-9_.]"
	qualifiedNameFmt    = "(" + qnameCharFmt + qnameExtCharFmt + "*)?" + qnameCharFmt
	qualifiedNameErrMsg = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"

	labelValueFmt    = "(" + qualifiedNameFmt + ")?"
	labelValueErrMsg = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"

	dns1123LabelFmt    = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	dns1123LabelErrMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"

	dns1123SubdomainFmt    = dns1123LabelFmt + "(\\." + dns1123LabelFmt + ")*"
	dns1123SubdomainErrMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
)

var (
	qualifiedNameRegexp    = regexp.MustCompile("^" + qualifiedNameFmt + "$")
	labelValueRegexp       = regexp.MustCompile("^" + labelValueFmt + "$")
	dns1123LabelRegexp     = regexp.MustCompile("^" + dns1123LabelFmt + "$")
	dns1123SubdomainRegexp = regexp.MustCompile("^" + dns1123SubdomainFmt + "$")
)

// IsQualifiedName reports the problems with value as a qualified name, the
// syntax of label keys: an optional DNS-1123 subdomain prefix of at most 253
// characters followed by "/", then a name of at most 63 characters made of
// [A-Za-z0-9_.-] that starts and ends with an alphanumeric character. It
// returns nil when value is valid.
func IsQualifiedName(value string) []string {
	var errs []string
	var name string
	switch parts := strings.Split(value, "/"); len(parts) {
	case 1:
		name = parts[0]
	case 2:
		prefix := parts[0]
		name = parts[1]
		if prefix == "" {
			errs = append(errs, "prefix part "+emptyError())
		} else {
			for _, msg := range IsDNS1123Subdomain(prefix) {
				errs = append(errs, "prefix part "+msg)
			}
		}
	default:
		return append(errs, "a qualified name "+regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc")+
			" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
	}
	if name == "" {
		errs = append(errs, "name part "+emptyError())
	} else if len(name) > QualifiedNameMaxLength {
		errs = append(errs, "name part "+maxLenError(QualifiedNameMaxLength))
	}
	if !qualifiedNameRegexp.MatchString(name) {
		errs = append(errs, "name part "+regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc"))
	}
	return errs
}

// IsValidLabelValue reports the problems with value as a label value: at most
// 63 characters, either empty or made of [A-Za-z0-9_.-] and starting and
// ending with an alphanumeric character. It returns nil when value is valid.
func IsValidLabelValue(value string) []string {
	var errs []string
	if len(value) > LabelValueMaxLength {
		errs = append(errs, maxLenError(LabelValueMaxLength))
	}
	if !labelValueRegexp.MatchString(value) {
		errs = append(errs, regexError(labelValueErrMsg, labelValueFmt, "MyValue", "my_value", "12345"))
	}
	return errs
}

// IsDNS1123Label reports the problems with value as an RFC 1123 DNS label
// (at most 63 lowercase alphanumerics or '-', starting and ending with an
// alphanumeric), as used for namespace names. It returns nil when value is
// valid.
func IsDNS1123Label(value string) []string {
	var errs []string
	if len(value) > DNS1123LabelMaxLength {
		errs = append(errs, maxLenError(DNS1123LabelMaxLength))
	}
	if !dns1123LabelRegexp.MatchString(value) {
		if dns1123SubdomainRegexp.MatchString(value) {
			// A valid subdomain but not a valid label: the length was
			// checked above, so the problem must be the dots.
			errs = append(errs, "must not contain dots")
		} else {
			errs = append(errs, regexError(dns1123LabelErrMsg, dns1123LabelFmt, "my-name", "123-abc"))
		}
	}
	return errs
}

// IsDNS1123Subdomain reports the problems with value as an RFC 1123 DNS
// subdomain (at most 253 characters, dot-separated DNS-1123 labels), as used
// for most object names and for label key prefixes. It returns nil when value
// is valid.
func IsDNS1123Subdomain(value string) []string {
	var errs []string
	if len(value) > DNS1123SubdomainMaxLength {
		errs = append(errs, maxLenError(DNS1123SubdomainMaxLength))
	}
	if !dns1123SubdomainRegexp.MatchString(value) {
		errs = append(errs, regexError(dns1123SubdomainErrMsg, dns1123SubdomainFmt, "example.com"))
	}
	return errs
}

// validateLabelKey returns an error naming key when it is not a valid label
// key, or nil.
func validateLabelKey(key string) error {
	if errs := IsQualifiedName(key); len(errs) != 0 {
		return fmt.Errorf("invalid label key %q: %s", key, strings.Join(errs, "; "))
	}
	return nil
}

// validateLabelValue returns an error naming key and value when value is not
// a valid label value, or nil.
func validateLabelValue(key, value string) error {
	if errs := IsValidLabelValue(value); len(errs) != 0 {
		return fmt.Errorf("invalid label value %q for key %q: %s", value, key, strings.Join(errs, "; "))
	}
	return nil
}

func emptyError() string {
	return "must be non-empty"
}

func maxLenError(n int) string {
	return fmt.Sprintf("must be no more than %d characters", n)
}

// regexError builds a message in the same shape as Kubernetes' validation
// messages, including their spacing, so that users see familiar text.
func regexError(msg, format string, examples ...string) string {
	if len(examples) == 0 {
		return msg + " (regex used for validation is '" + format + "')"
	}
	var b strings.Builder
	b.WriteString(msg)
	b.WriteString(" (e.g. ")
	for i, ex := range examples {
		if i > 0 {
			b.WriteString(" or ")
		}
		b.WriteString("'" + ex + "', ")
	}
	b.WriteString("regex used for validation is '" + format + "')")
	return b.String()
}
