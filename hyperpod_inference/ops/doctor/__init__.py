"""``doctor``: read-only checks of the account and the cluster a config deploys to, by check family.

- :mod:`.base`: what checks are written with: :class:`~.base.Result`, :class:`~.base.Context` (the config, the clients
  and the reads several checks share) and :class:`~.base.Family` (a family's registry of checks);
- :mod:`.runner`: the families it runs, ``--only``, the exit status and the table (:func:`~.runner.run`,
  :func:`~.runner.exit_status`, :func:`~.runner.render`);
- one module per family, each holding its checks registered on its ``FAMILY``: :mod:`.account`, :mod:`.cluster`,
  :mod:`.kubernetes`, :mod:`.operator`, :mod:`.capture`, :mod:`.domain` and :mod:`.model` (with its part
  :mod:`.model_s3`, whose checks it registers). A family module imports :mod:`.base` and its own parts, never another
  family.
"""
