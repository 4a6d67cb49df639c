// Launch configurations as a case axis (issue 23 (D); kvharness/provider.h kvh_launch_config):
// a case file's `launch_configs` ("all" or names) becomes one case per configuration its reader
// declares, each with Case::launch_config set (the id gains "/cfg=NAME"); the reader's call then
// carries that configuration (kvh_attention_args.launch_config).
#pragma once
#include <vector>

#include "case.h"
#include "registry/registry.h"

namespace kvh {

/// The cases `c` stands for: {c} when it selects no configuration (launch_configs empty) or its
/// kernel is not registered (`list --allow-unknown-kernels`: the caller names it); else one copy
/// per selected configuration of its kernel (the writer of a write case, else the reader; "all":
/// every declared one, in declared order), each
/// with launch_config set and launch_configs cleared. Throws CaseFileError
/// "FILE:LINE: field 'launch_configs': ..." (the key's line) when the kernel declares no
/// configuration of a given name (naming those it declares), or none at all.
std::vector<Case> expand_launch_configs(const Case& c, const Registry& reg);

/// The call-time view of the configuration case `c` runs on kernel `k`: {name, params} pointing
/// into k's declaration, for kvh_attention_args.launch_config; {null, null} when c runs the
/// default launch or k does not declare it (a router's pick: never, the case file refuses).
kvh_launch_config launch_config_of(const Case& c, const Kernel& k);

}  // namespace kvh
