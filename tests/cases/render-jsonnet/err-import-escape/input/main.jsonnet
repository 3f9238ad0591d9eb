local x = import '../outside.libsonnet';
x
