// k.libsonnet comes from the library path; parts/ is next to this file;
// shadowed.libsonnet is in both library dirs and the last one wins.
local k = import 'k.libsonnet';
local labels = import 'parts/labels.libsonnet';
local shadowed = import 'shadowed.libsonnet';
k.configMap('web', labels + shadowed)
