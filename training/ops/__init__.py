"""Running the pipeline on machines: packing what a GPU machine without network access gets and gives back
(``device_pack``), the script such a machine runs (``device_run.sh``), the historical CPU campaign
(``campaign.sh``) and the stage checks both source (``stages.sh``). The scripts ``cd`` to the repository root."""
