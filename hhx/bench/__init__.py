"""The benchmark layer: splits and sampling (spec 5), the release and eval-sample layouts (spec
4.1-4.2, 5.6, 6.1, 7.5). Everything downstream of the task builders reads tasks only from here."""
