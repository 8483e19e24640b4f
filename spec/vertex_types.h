/*
 * vertex_types.h - the Vertex AI aiplatform v1 CustomJob and
 * TrainingPipeline messages as schema data (reference §5.2-5.5), fields by
 * proto field number (googleapis google/cloud/aiplatform/v1/custom_job.proto,
 * machine_resources.proto, training_pipeline.proto, ...).
 */
#ifndef TP_VERTEX_TYPES_H
#define TP_VERTEX_TYPES_H

#include "schema.h"

/*
 * A TrainingPipeline is stored as its backing CustomJob (same id), with the
 * pipeline's own fields (displayName, trainingTaskDefinition,
 * trainingTaskInputs) under this key of the job's stored spec: what tells a
 * pipeline's job from a plain CustomJob.
 */
#define VERTEX_PIPELINE_KEY "_pipeline"

/*
 * A HyperparameterTuningJob's trial is a CustomJob whose stored spec has,
 * under this key (never rendered), {"metricTag", "study": the tuning job's
 * id, "trial": n}: what the scheduler tells the trial's replicas
 * (CLOUD_ML_HP_METRIC_TAG) and what names its tuning job in messages.
 */
#define VERTEX_TRIAL_KEY "_trial"

extern const struct schema_message vertex_custom_job_message;	/* CustomJob */
extern const struct schema_message *const vertex_custom_job_spec_message;	/* CustomJobSpec */
extern const struct schema_message vertex_training_pipeline_message;	/* TrainingPipeline */
/* HyperparameterTuningJob (studySpec, trialJobSpec, trials) */
extern const struct schema_message vertex_hyperparameter_tuning_job_message;
extern const struct schema_message vertex_parameter_spec_message;	/* StudySpec.ParameterSpec */

/* The list methods' replies (the discovery document describes them). */
extern const struct schema_message vertex_list_custom_jobs_response_message;
extern const struct schema_message vertex_list_training_pipelines_response_message;
extern const struct schema_message vertex_list_hyperparameter_tuning_jobs_response_message;

#endif
